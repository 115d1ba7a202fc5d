"""The scores an evaluation returns, readable as a mapping and drawn as a table or bars:
:class:`Scores` (any family: its model hands in the table that prints them) and
:class:`FaithfulnessScores` (``attnkit faithfulness``)."""

from __future__ import annotations

import html
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

from attnkit.viz.inline import show_html

_MONOSPACE = (
    "font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,'DejaVu Sans Mono',monospace;"
    "white-space:pre;font-size:13px;line-height:1.35;overflow-x:auto"
)


class Scores(Mapping):
    """The scores of an evaluation (what ``scores.json`` holds), readable as a mapping:
    ``scores["greedy"]["exact_match"]``, ``scores.metric`` (the deciding metric's name) and
    ``scores.value`` (its value, greedy decoding)."""

    def __init__(self, scores: dict[str, Any], summary: Callable[[dict], str] | None = None):
        self._scores = dict(scores)
        self._summary = summary  # scores -> the printed table; None: decodings' or plain rows

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
        """The table ``attnkit evaluate`` prints: the family's own (handed in by its model),
        else one row per decoding (seq2seq-style scores), else one line per figure."""
        if self._summary is not None:
            return self._summary(self._scores)
        if "greedy" in self._scores:
            from attnkit.evaluation.summary import scores_table

            return scores_table(self._scores)
        return "\n".join(
            f"{key}: {value}" for key, value in self._scores.items() if not isinstance(value, dict)
        )

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
        # the table's columns are aligned by spaces: monospace whatever a theme gives <pre>
        return f'<pre class="attnkit-scores" style="{_MONOSPACE}">{html.escape(self.table())}</pre>'


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
