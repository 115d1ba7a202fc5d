"""The result objects of the Python API beside :class:`attnkit.translator.Translation`.

Each has ``to_dict()`` (plain JSON types), ``plot(path_or_ax)`` (matplotlib) and ``show()`` /
``_repr_html_`` (an inline, self-contained view in a notebook, drawn by the renderer of
report.html and the explorer).
"""

from __future__ import annotations

import dataclasses
import html
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from attnkit.viz.inline import ShowsRecord, show_html, vision_html
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

    def plot(self, path_or_ax=None, layer=None, head=None):
        """Attention and saliency side by side on shared axes (the saliency alone for a model
        without attention), to a file or onto a new figure; into an ``Axes``: the attention."""
        from attnkit.viz import plot_side_by_side

        if self.attention is None or not (path_or_ax is None or isinstance(path_or_ax, str | Path)):
            return super().plot(path_or_ax, layer, head)
        record = self.record()
        salient = dataclasses.replace(record, weights=self.saliency, saliency=None)
        titles = ("attention", f"saliency ({self.method})")
        return plot_side_by_side(record, salient, path_or_ax, titles=titles)


@dataclass
class Classification:
    """What a vision model answered for one image and where it looked.

    ``image``: ``(H, W)`` in 0..1. ``steps``: one dict per step, ``{"attention": (h, w) nested
    lists | None, "glimpse": {"x", "y", "size"} | None, "token": str | None}`` (a reader's
    per-digit maps, the attention-pooling map, RAM's glimpses). ``probs``: the class
    probabilities of a classifier (None for a reader)."""

    prediction: str
    probs: list[float] | None
    image: np.ndarray
    steps: list[dict]
    label: str | None = None
    figure_of: Any = field(default=None, repr=False)  # () -> matplotlib Figure, set by the model

    @property
    def attention(self) -> list[np.ndarray]:
        """Each step's attention map ``(h, w)`` (empty for RAM, whose steps are glimpses)."""
        return [np.asarray(s["attention"]) for s in self.steps if s.get("attention") is not None]

    @property
    def glimpses(self) -> list[dict]:
        """RAM's glimpse path: ``{"x", "y"}`` centres in -1..1 and ``size`` in pixels."""
        return [s["glimpse"] for s in self.steps if s.get("glimpse") is not None]

    def to_dict(self) -> dict[str, Any]:
        return {
            "prediction": self.prediction,
            "probs": self.probs,
            "label": self.label,
            "image": np.round(self.image, 4).tolist(),
            "steps": self.steps,
        }

    def plot(self, path_or_ax=None):
        """The steps as one figure (the picture ``attnkit plot`` draws), saved to a path when one
        is given; into an ``Axes``: the image with the first step's attention."""
        if path_or_ax is not None and not isinstance(path_or_ax, str | Path):
            return self._plot_into(path_or_ax)
        fig = self.figure_of()
        if path_or_ax is not None:
            from attnkit.viz.visual import save_figure

            save_figure(fig, path_or_ax)
        return fig

    def _plot_into(self, ax):
        from attnkit.viz.visual import upsample_map

        ax.imshow(self.image, cmap="gray")
        maps = self.attention
        if maps:
            h, w = self.image.shape
            ax.imshow(upsample_map(maps[0], h, w), cmap="viridis", alpha=0.5)
        ax.set_title(f"pred {self.prediction}")
        ax.axis("off")
        return ax.figure

    def show(self) -> Path | None:
        return show_html(self._repr_html_())

    def _repr_html_(self) -> str:
        return vision_html(self.image, self.steps, self.prediction, self.label)


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
        from attnkit.training.text_scoring import Answer, record_of

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


class Scores(Mapping):
    """The scores of an evaluation (what ``scores.json`` holds), readable as a mapping:
    ``scores["greedy"]["exact_match"]``, ``scores.metric`` (the deciding metric's name) and
    ``scores.value`` (its value, greedy decoding)."""

    def __init__(self, scores: dict[str, Any]):
        self._scores = dict(scores)

    def __getitem__(self, key: str) -> Any:
        return self._scores[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._scores)

    def __len__(self) -> int:
        return len(self._scores)

    @property
    def metric(self) -> str | None:
        return self._scores.get("metric")

    @property
    def value(self) -> float | None:
        """The deciding metric of greedy decoding (seq2seq), or the accuracy (vision)."""
        if "greedy" in self._scores and self.metric:
            return self._scores["greedy"].get(self.metric)
        return self._scores.get("accuracy")

    @property
    def out(self) -> Path | None:
        """The directory the hypotheses, scores.json and report.html went to."""
        out = self._scores.get("out")
        return None if out is None else Path(out)

    def to_dict(self) -> dict[str, Any]:
        return dict(self._scores)

    def table(self) -> str:
        """The table ``attnkit evaluate`` prints."""
        if self._scores.get("family") == "text":
            from attnkit.evaluation.text import summary as text_summary

            return text_summary(self._scores)
        if "greedy" in self._scores:
            from attnkit.evaluation.summary import scores_table

            return scores_table(self._scores)
        if "nodes" in self._scores:  # a graph model's
            from attnkit.evaluation.graph import summary as graph_summary

            return graph_summary(self._scores)
        from attnkit.evaluation.vision import summary

        return summary(self._scores)

    def __str__(self) -> str:
        return self.table()

    def __repr__(self) -> str:
        return f"Scores({self.metric or 'accuracy'}={self.value})"

    def _rows(self) -> list[tuple[str, float]]:
        """(label, value) of every numeric figure of every decoding (or the vision figures)."""
        runs = [k for k in self._scores if k == "greedy" or k.startswith("beam")]
        if not runs:
            return [
                (k, float(v))
                for k, v in self._scores.items()
                if k in ("accuracy", "error_pct") and isinstance(v, int | float)
            ]
        from attnkit.evaluation.summary import SIZES, TIMINGS

        skip = {*SIZES, *TIMINGS}  # counts and speeds: not scores
        return [
            (f"{run} {k}", float(v))
            for run in runs
            for k, v in self._scores[run].items()
            if k not in skip and isinstance(v, int | float)
        ]

    def plot(self, path_or_ax=None):
        """The figures as horizontal bars, into an ``Axes``, to a file, or on a new figure."""
        from matplotlib.figure import Figure

        rows = self._rows()
        if path_or_ax is None or isinstance(path_or_ax, str | Path):
            fig = Figure(figsize=(6, 0.4 * len(rows) + 1.2), layout="constrained")
            ax = fig.add_subplot()
        else:
            ax, fig = path_or_ax, path_or_ax.figure
        ax.barh([r[0] for r in rows][::-1], [r[1] for r in rows][::-1], color="#3b528b")
        for y, (_, v) in enumerate(rows[::-1]):
            ax.text(v, y, f" {v:g}", va="center", fontsize=9)
        ax.set_title(f"{self._scores.get('task', '')} {self._scores.get('split') or ''}".strip())
        if isinstance(path_or_ax, str | Path):
            fig.savefig(path_or_ax)
        return fig

    def show(self) -> Path | None:
        return show_html(self._repr_html_())

    def _repr_html_(self) -> str:
        return "<pre>" + html.escape(self.table()) + "</pre>"


class FaithfulnessScores(Scores):
    """What ``attnkit faithfulness`` measured (scores.json's summary under ``"summary"``):
    ``table()`` the printed table, ``plot(path_or_ax)`` the comprehensiveness and sufficiency
    curves, ``value`` the attention's comprehensiveness AOPC."""

    @property
    def value(self) -> float | None:
        erasure = self._scores["summary"]["erasure"]
        return erasure["attention"]["aopc_comprehensiveness"] if "attention" in erasure else None

    def table(self) -> str:
        from attnkit.evaluation.faithfulness_report import table

        return table(self._scores["summary"])

    def plot(self, path_or_ax=None):
        """The curves: to a file (.png/.svg/.pdf), into two Axes, or a new figure."""
        from attnkit.evaluation.faithfulness_report import plot_curves

        return plot_curves(self._scores["summary"], path_or_ax)

    def __repr__(self) -> str:
        return f"FaithfulnessScores(attention comprehensiveness AOPC={self.value})"
