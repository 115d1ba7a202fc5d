"""Pictures of a memory network's hops: where each hop looked among the story's sentences.

The figure of Sukhbaatar et al. (2015, Figure 2): the story's sentences down the left, one
column per hop, each cell the hop's attention on that sentence, the supporting facts marked
(``*`` and an outlined row), the question and the answer above. :func:`hops_record` gives the
same map as an :class:`~attnkit.viz.records.AttentionRecord` (rows: sentences, columns: hops;
gold links: the supporting facts at every hop), so report.html, ``.show()`` and the explorer
draw it with the shared renderer.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.patches import Rectangle

from attnkit.viz.records import AttentionRecord

MAX_LABEL = 60  # characters of a sentence shown as a row label


def hop_labels(hops: int) -> list[str]:
    return [f"hop {k + 1}" for k in range(hops)]


def hops_record(
    memories: Sequence[str],
    question: str,
    answer: str,
    weights: np.ndarray,
    supporting: Sequence[int] = (),
    truth: str | None = None,
) -> AttentionRecord:
    """The hops' attention ``weights`` (K, M) over ``memories`` as a record of M rows (the
    sentences) and K columns (the hops); the supporting facts are its gold cells."""
    weights = np.asarray(weights, dtype=np.float64)
    hops = weights.shape[0]
    gold = [(int(s), k) for s in supporting for k in range(hops)]
    return AttentionRecord(
        source=question,
        source_tokens=hop_labels(hops),
        output=answer,
        output_tokens=list(memories),
        weights=weights.T.copy(),
        reference=truth,
        right=None if truth is None else answer == truth,
        gold=gold or None,
    )


def draw_hops(ax, record: AttentionRecord) -> None:
    """The record of :func:`hops_record` into ``ax``: sentences as rows, hops as columns."""
    weights = np.asarray(record.weights)  # (M, K)
    rows, cols = weights.shape
    ax.imshow(
        weights,
        cmap="Blues",
        vmin=0.0,
        vmax=max(1.0, float(weights.max(initial=0))),
        aspect="auto",
        interpolation="nearest",
    )
    supporting = {r for r, _ in record.gold or ()}
    labels = []
    for i, text in enumerate(record.output_tokens):
        short = text if len(text) <= MAX_LABEL else text[: MAX_LABEL - 1] + "…"
        labels.append(f"{'* ' if i in supporting else ''}{i + 1}. {short}")
    ax.set_yticks(range(rows), labels, fontsize=9)
    ax.xaxis.tick_top()
    ax.set_xticks(range(cols), record.source_tokens, fontsize=9)
    for r in sorted(supporting):
        ax.add_patch(Rectangle((-0.5, r - 0.5), cols, 1, fill=False, edgecolor="#d62728", lw=1.5))
    for r in range(rows):
        for c in range(cols):
            value = weights[r, c]
            if value >= 0.005:
                colour = "white" if value > 0.6 else "black"
                ax.text(c, r, f"{value:.2f}", ha="center", va="center", fontsize=8, color=colour)
    truth = "" if record.reference is None else f"  (truth: {record.reference})"
    ax.set_title(f"{record.source}  ->  {record.output}{truth}", fontsize=10, loc="left")
    ax.tick_params(length=0)


def hops_figure(question, weights: np.ndarray, vocab=None, answer: str | None = None) -> Figure:
    """The figure of one :class:`~attnkit.data.babi.Question` and its hops' ``weights`` (K, M)
    (``answer``: the model's, when known; TensorBoard shows the truth)."""
    record = hops_record(
        question.memories[-weights.shape[1] :] if weights.shape[1] else (),
        question.question,
        answer if answer is not None else question.answer,
        weights,
        question.supporting,
        question.answer if answer is not None else None,
    )
    return record_figure(record)


def record_figure(record: AttentionRecord) -> Figure:
    """A new figure sized to the story, holding :func:`draw_hops`."""
    rows, cols = np.asarray(record.weights).shape
    longest = max((len(t) for t in record.output_tokens), default=10)
    width = 2.0 + 0.07 * min(longest, MAX_LABEL) + 0.8 * cols
    fig = Figure(figsize=(min(width, 14.0), min(1.2 + 0.3 * rows, 16.0)), layout="constrained")
    FigureCanvasAgg(fig)
    draw_hops(fig.add_subplot(), record)
    return fig


def save_hops(record: AttentionRecord, path: str | Path) -> Path:
    """The figure of ``record`` written to ``path`` (.png, .svg or .pdf)."""
    path = Path(path)
    if path.suffix.lower() not in (".png", ".svg", ".pdf"):
        raise ValueError(f"{path}: use a .png, .svg or .pdf file name")
    path.parent.mkdir(parents=True, exist_ok=True)
    fig = record_figure(record)
    fig.savefig(path, dpi=110)
    fig.clear()
    return path
