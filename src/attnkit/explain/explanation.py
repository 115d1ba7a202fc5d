"""What ``explain`` returns for one input: :class:`Explanation`, the attention beside the
gradient saliency of the same output (seq2seq models and text classifiers).

``to_dict()`` (plain JSON types), ``plot(path_or_ax)`` (matplotlib: the two maps side by side,
:meth:`attnkit.viz.inline.ShowsRecord.plot`) and ``show()`` / ``_repr_html_`` (an inline view in
a notebook, drawn by the renderer of report.html).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from attnkit.viz.inline import ShowsRecord
from attnkit.viz.records import AttentionRecord


@dataclass
class Explanation(ShowsRecord):
    """One input's output, with the attention paid while writing it and the gradient saliency of
    the same output (``method``), and how far the two agree.

    ``attention`` and ``saliency`` are ``(T, S)`` maps; ``attention`` is None for a model without
    attention. ``scores``: ``argmax_agreement`` (share of output steps whose most attended and
    most salient source token agree) and ``rank_correlation`` (mean Spearman's rho per step),
    and the AER of each map against the task's gold links where it has them."""

    source: str
    source_tokens: list[str]
    output: str
    output_tokens: list[str]
    attention: np.ndarray | None
    saliency: np.ndarray
    method: str
    scores: dict[str, Any] = field(default_factory=dict)
    gold: list[tuple[int, int]] | None = None

    def record(self) -> AttentionRecord:
        """The attention with its saliency beside it (a choice in the view); a model without
        attention: the saliency as the map."""
        weights = self.saliency if self.attention is None else self.attention
        saliency = None if self.attention is None else self.saliency
        return AttentionRecord(
            self.source,
            self.source_tokens,
            self.output,
            self.output_tokens,
            weights,
            gold=self.gold,
            saliency=saliency,
        )

    def _view_title(self) -> str | None:
        if self.attention is None:
            return f"no attention: saliency ({self.method})"
        return None

    def to_dict(self) -> dict[str, Any]:
        return {**self.record().to_json(), "method": self.method, "scores": self.scores}
