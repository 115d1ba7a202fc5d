"""Scoring a speech model: greedy spellings of a split, exact match and character error rate,
overall and per language."""

from __future__ import annotations

import torch

from attnkit.data.tasks.speech_set import SpeechSet, decode
from attnkit.evaluation.metrics import char_error_rate
from attnkit.models.las import LAS

MAX_DIGITS = 12  # spellings are cut here (a number of the task has at most 7 digits)


def transcribe(model: LAS, data: SpeechSet, batch_size: int = 100) -> list[str]:
    """Greedy spellings of every item of ``data``, in order."""
    device = next(model.parameters()).device
    model.eval()
    found: list[str] = []
    for start in range(0, len(data), batch_size):
        features, lengths, _ = data.batch(range(start, min(start + batch_size, len(data))))
        outputs, _ = model.greedy(features.to(device), lengths, MAX_DIGITS)
        found.extend(decode(row) for row in outputs.tolist())
    return found


def score(model: LAS, data: SpeechSet, batch_size: int = 100) -> dict:
    """Exact match and CER of the greedy spellings, overall and per language."""
    found = transcribe(model, data, batch_size)
    refs = [item.digits for item in data.items]
    scores = _figures(found, refs)
    for lang in sorted({item.voice.language for item in data.items}):
        mine = [i for i, item in enumerate(data.items) if item.voice.language == lang]
        scores[lang] = _figures([found[i] for i in mine], [refs[i] for i in mine])
    scores.update(metric="exact_match", higher_is_better=True, items=len(refs))
    return scores


def _figures(found: list[str], refs: list[str]) -> dict:
    exact = sum(f == r for f, r in zip(found, refs)) / max(len(refs), 1)
    return {"exact_match": round(100 * exact, 2), "cer": round(char_error_rate(found, refs), 2)}


@torch.no_grad()
def dev_scorer(model: LAS, data: SpeechSet, batch_size: int) -> dict:
    """The dev scores the training loop decides by."""
    return score(model, data, batch_size)
