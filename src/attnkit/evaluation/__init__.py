"""Evaluation: sequence metrics (exact match, G2P WER/PER, sacrebleu BLEU/chrF)."""

from attnkit.evaluation.metrics import (
    bleu,
    chrf,
    edit_distance,
    exact_match,
    g2p_scores,
    sequence_metrics,
)

__all__ = ["bleu", "chrf", "edit_distance", "exact_match", "g2p_scores", "sequence_metrics"]
