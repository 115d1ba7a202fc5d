"""What a text classifier's ``classify`` returns: :class:`TextClassification`, with
``to_dict()``, ``plot(path_or_ax)`` (explained: the attention beside the saliency) and
``show()`` / ``_repr_html_`` (an inline view in a notebook, drawn by the renderer of
report.html)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from attnkit.viz.inline import ShowsRecord
from attnkit.viz.records import AttentionRecord


@dataclass
class TextClassification(ShowsRecord):
    """What a text classifier answered for one sentence, and the weight it gave each word.

    ``label``: the predicted class; ``probs``: class name -> probability; ``tokens``: the words
    the model read; ``weights``: the attention over them, ``(S,)`` (``(R, S)`` for structured
    self-attention's R heads; None for a model without attention); ``saliency``: ``(S,)`` the
    gradient saliency of the answer (:meth:`TextModel.explain`; ``method`` names it), else None.
    ``word_weights`` pairs each word with its weight (the heads' mean)."""

    text: str
    tokens: list[str]
    label: str
    probs: dict[str, float]
    weights: np.ndarray | None
    saliency: np.ndarray | None = None
    method: str | None = None
    gold: str | None = None

    @property
    def word_weights(self) -> list[tuple[str, float]]:
        """(word, attention) pairs; a model without attention: (word, saliency) where explained."""
        shown = self.weights if self.weights is not None else self.saliency
        if shown is None:
            return []
        shown = np.asarray(shown)
        shown = shown.mean(0) if shown.ndim == 2 else shown
        return [(w, float(x)) for w, x in zip(self.tokens, shown, strict=True)]

    def record(self) -> AttentionRecord:
        """One row (the answer) over the words: the attention (each head in ``heads``), the
        saliency beside it; without attention, the saliency (or uniform weights) as the map."""
        from attnkit.families.text.scoring import Answer, record_of

        names = list(self.probs)
        weights = None if self.weights is None else np.asarray(self.weights)
        answer = Answer(np.array([self.probs[k] for k in names]), weights)
        gold = names.index(self.gold) if self.gold in names else None
        return record_of(self.tokens, answer, names, gold, self.saliency)

    def _view_title(self) -> str | None:
        if self.weights is None:
            return "no attention: saliency" if self.saliency is not None else "no attention"
        return None

    def to_dict(self) -> dict[str, Any]:
        def listed(array):
            return None if array is None else np.round(np.asarray(array), 6).tolist()

        return {
            "text": self.text,
            "tokens": list(self.tokens),
            "label": self.label,
            "probs": {k: round(float(v), 6) for k, v in self.probs.items()},
            "weights": listed(self.weights),
            "saliency": listed(self.saliency),
            "method": self.method,
        }
