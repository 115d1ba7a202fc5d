"""Decode a split and score it with the task's metric family.

* ``exact`` (numbers, dates, parallel's ``exact``): per distinct source, right if the
  output equals any of its references;
* ``g2p``: per distinct word, WER (no reference matched) and PER (against the
  closest reference), as in the literature;
* ``bleu``: every line, sacrebleu BLEU and chrF on detokenized text;
* ``text`` (parallel with ``data.metric`` bleu, chrf, wer or cer): every line,
  BLEU, chrF, corpus WER and CER, and exact match, against its one reference.

Which score of the family decides (picks the best checkpoint, stops early) is the
task's :class:`attnkit.data.tasks.registry.Metric`.
"""

from __future__ import annotations

from collections.abc import Sequence

from attnkit.evaluation.examples import group_references
from attnkit.evaluation.metrics import bleu, chrf, g2p_scores, text_scores
from attnkit.families.seq2seq.translator import as_translator

LINE_BY_LINE = ("bleu", "text")
"""Families that score every line against its own reference; the others score each distinct
source against all of its references."""


def evaluation_inputs(
    family: str, pairs: Sequence[tuple[str, str]]
) -> tuple[list[str], list[list[str]]]:
    """The sources to decode and their reference lists, for a metric family."""
    if family in LINE_BY_LINE:
        return [s for s, _ in pairs], [[t] for _, t in pairs]
    refs = group_references(pairs)
    return list(refs), list(refs.values())


def score(family: str, hyps: Sequence[str], refs: Sequence[list[str]]) -> dict:
    """Metrics (percentages) for outputs ``hyps`` against reference lists ``refs``."""
    if family == "bleu":
        first = [r[0] for r in refs]
        return {
            "bleu": round(bleu(hyps, first), 2),
            "chrf": round(chrf(hyps, first), 2),
            "sentences": len(hyps),
        }
    if family == "text":
        scores = text_scores(list(hyps), [r[0] for r in refs])
        return {**{k: round(v, 2) for k, v in scores.items()}, "sentences": len(hyps)}
    if family == "g2p":
        return g2p_scores(list(hyps), [list(r) for r in refs])
    right = sum(h in r for h, r in zip(hyps, refs))
    return {"exact_match": round(100.0 * right / max(1, len(hyps)), 2), "items": len(hyps)}


def evaluate_translator(
    translator,
    family: str,
    pairs,
    beam_size: int = 1,
    alpha: float | None = None,
    progress: bool = False,
):
    """Decode ``pairs``' sources -> (metrics, sources, references, translations). ``translator``:
    a :class:`~attnkit.families.seq2seq.translator.Translator`, or the
    :class:`~attnkit.families.seq2seq.bundle.Seq2SeqBundle` a run trains (the trainer's dev
    scorer)."""
    sources, refs = evaluation_inputs(family, pairs)
    translations = as_translator(translator).translate(
        sources, beam_size=beam_size, alpha=alpha, progress=progress, warn_unknown=False
    )
    metrics = score(family, [t.output for t in translations], refs)
    return metrics, sources, refs, translations
