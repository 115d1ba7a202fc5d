"""Attention heatmaps: weights ``(T, S)`` + token labels in, a figure or file out.

Source tokens run along the x axis (labels on top, where reading starts),
output tokens down the y axis, one cell per (output, source) pair. Everything
uses matplotlib's object API (``Figure`` + ``FigureCanvasAgg``), never pyplot,
so it works headless, in threads, and leaks no global figure state.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import matplotlib
import numpy as np
from matplotlib.axes import Axes
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from attnkit.viz.records import AttentionRecord

ANNOTATE_MAX = 12  # annotate cell values when both T and S are at most this
_SPECIAL = {"\n": "↵", "\t": "⇥"}
_SPACES = re.compile(" +")
_MIN_SIZE, _MAX_SIZE = (4.0, 3.0), (16.0, 12.0)  # figure inches (w, h)
_FORMATS = (".png", ".svg", ".pdf")


def _mark_spaces(run: re.Match) -> str:
    """A single space between two other characters reads as one (a sentence's words); a space
    alone, at an edge or in a run would not be seen, so it is marked."""
    inside = 0 < run.start() and run.end() < len(run.string)
    return run.group() if inside and len(run.group()) == 1 else "␣" * len(run.group())


def display_token(token: str) -> str:
    """A token as an axis label: whitespace made visible (a phrase's inner single spaces kept),
    ``$`` kept literal."""
    if token == "":
        return "∅"
    text = "".join(_SPECIAL.get(ch, ch) for ch in _SPACES.sub(_mark_spaces, token))
    return text.replace("$", r"\$")  # a pair of $ would start matplotlib mathtext


def label_fontsize(n: int) -> float:
    """Tick label size in points: 10 up to 20 labels, shrinking to 5 at 70+."""
    return float(np.clip(10.0 - (n - 20) * 0.1, 5.0, 10.0))


def figure_size(rows: int, cols: int) -> tuple[float, float]:
    """Inches for a ``rows x cols`` matrix plus labels and colour bar, within limits."""
    width = 2.5 + 0.32 * cols
    height = 1.5 + 0.28 * rows
    return (
        float(np.clip(width, _MIN_SIZE[0], _MAX_SIZE[0])),
        float(np.clip(height, _MIN_SIZE[1], _MAX_SIZE[1])),
    )


def plot_heatmap(
    record_or_weights: AttentionRecord | Any,
    source_tokens: Sequence[str] | None = None,
    output_tokens: Sequence[str] | None = None,
    path: str | Path | None = None,
    title: str | None = None,
    ax: Axes | None = None,
    cmap: str = "viridis",
    annotate: bool | None = None,
    value_label: str = "attention weight",
) -> Figure:
    """Draw one attention matrix (or another map of the same shape, named by ``value_label`` on
    the colour bar) and return its figure.

    ``record_or_weights`` is an :class:`AttentionRecord` or an array-like (a
    torch tensor works) of shape ``(T, S)``. Explicit ``source_tokens`` /
    ``output_tokens`` override the record's; for a bare array they default to
    positions ``0..S-1`` / ``0..T-1``. With ``ax`` the heatmap is drawn into
    that axes (and its figure returned); otherwise a new figure sized to the
    matrix is made. ``annotate=None`` writes cell values when the matrix is
    at most 12 x 12. With ``path`` the figure is also saved (.png or .svg).
    """
    weights, src, out = _unpack(record_or_weights, source_tokens, output_tokens)
    if ax is None:
        fig = _new_figure(figure_size(*weights.shape))
        ax = fig.add_subplot()
    else:
        fig = ax.figure
    image = _draw(ax, weights, src, out, cmap=cmap, annotate=annotate)
    switch = getattr(record_or_weights, "p_gen", None)
    pad = 0.03 if switch is None else 0.02 + _draw_switch(ax, switch, cmap)
    colorbar = fig.colorbar(image, ax=ax, fraction=0.046, pad=pad)
    colorbar.set_label(value_label)
    if title:
        ax.set_title(title, fontsize=11, pad=8)
    if path is not None:
        _save(fig, path)
    return fig


def save_heatmap(record: AttentionRecord | Any, path: str | Path, **kwargs: Any) -> Path:
    """Save a heatmap of ``record`` as ``.png``, ``.svg`` or ``.pdf`` (by suffix); returns the path.

    Parent directories are created. ``kwargs`` go to :func:`plot_heatmap`.
    """
    path = _check_suffix(path)
    fig = plot_heatmap(record, **kwargs)
    try:
        _save(fig, path)
    finally:
        fig.clear()  # no pyplot registry to close from; drop the artists now
    return path


def plot_heatmap_grid(
    records: Sequence[AttentionRecord],
    path: str | Path | None,
    cols: int = 2,
    cmap: str = "viridis",
    titles: Sequence[str] | None = None,
) -> Figure:
    """Several records side by side in one figure (reports, README), saved to ``path``.

    Each panel is titled with ``titles[i]``, or by default its output (marked ✓/✗ when a
    reference exists); one shared colour bar covers all panels.
    """
    if not records:
        raise ValueError("plot_heatmap_grid needs at least one record")
    if cols < 1:
        raise ValueError(f"cols must be >= 1, got {cols}")
    cols = min(cols, len(records))
    rows = -(-len(records) // cols)
    cell_w = max(figure_size(*r.weights.shape)[0] for r in records)
    cell_h = max(figure_size(*r.weights.shape)[1] for r in records)
    fig = _new_figure((min(cell_w * cols, 24.0), min(cell_h * rows, 30.0)))
    axes = fig.subplots(rows, cols, squeeze=False)
    image = None
    for i, ax in enumerate(axes.flat):
        if i >= len(records):
            ax.set_axis_off()
            continue
        record = records[i]
        image = _draw(
            ax,
            record.weights,
            record.source_tokens,
            record.output_tokens,
            cmap=cmap,
            annotate=None,
            vmax=1.0,
            aspect="equal",
        )
        title = titles[i] if titles is not None else _panel_title(record)
        ax.set_title(title, fontsize=10, pad=6)
    colorbar = fig.colorbar(image, ax=axes.ravel().tolist(), fraction=0.03, pad=0.02)
    colorbar.set_label("attention weight")
    if path is not None:
        _save(fig, path)
    return fig


def plot_side_by_side(
    left: AttentionRecord,
    right: AttentionRecord,
    path: str | Path | None,
    titles: tuple[str, str] = ("attention", "saliency"),
    cmap: str = "viridis",
) -> Figure:
    """Two maps of the same source and output on shared axes (attention beside saliency), each
    with its own colour bar; saved to ``path`` (.png or .svg) when given."""
    if left.weights.shape != right.weights.shape:
        raise ValueError(
            f"side-by-side maps must have one shape, got {left.weights.shape} and "
            f"{right.weights.shape}"
        )
    width, height = figure_size(*left.weights.shape)
    fig = _new_figure((min(2 * width, 24.0), height))
    for ax, record, title in zip(fig.subplots(1, 2, squeeze=True), (left, right), titles):
        image = _draw(
            ax, record.weights, record.source_tokens, record.output_tokens, cmap=cmap, annotate=None
        )
        fig.colorbar(image, ax=ax, fraction=0.046, pad=0.03)
        ax.set_title(title, fontsize=11, pad=8)
    if path is not None:
        _save(fig, path)
    return fig


# ------------------------------------------------------------------ helpers


def _unpack(obj, source_tokens, output_tokens) -> tuple[np.ndarray, list[str], list[str]]:
    if isinstance(obj, AttentionRecord):
        weights = obj.weights
        src = obj.source_tokens if source_tokens is None else source_tokens
        out = obj.output_tokens if output_tokens is None else output_tokens
    else:
        if hasattr(obj, "detach"):  # a torch tensor, possibly on a GPU
            obj = obj.detach().float().cpu().numpy()
        weights = np.asarray(obj, dtype=np.float64)
        if weights.ndim != 2:
            raise ValueError(f"attention weights must be 2-D (T, S), got shape {weights.shape}")
        src = [str(i) for i in range(weights.shape[1])] if source_tokens is None else source_tokens
        out = [str(i) for i in range(weights.shape[0])] if output_tokens is None else output_tokens
    src, out = [str(t) for t in src], [str(t) for t in out]
    if weights.shape != (len(out), len(src)):
        raise ValueError(
            f"attention weights have shape {weights.shape}, expected "
            f"{(len(out), len(src))} = (len(output_tokens), len(source_tokens))"
        )
    return weights, src, out


def _new_figure(size: tuple[float, float]) -> Figure:
    fig = Figure(figsize=size, dpi=100, layout="constrained")
    FigureCanvasAgg(fig)  # attaches itself as fig.canvas
    return fig


def _draw(ax: Axes, weights, src, out, *, cmap, annotate, vmax=None, aspect="auto"):
    """Draw the matrix into ``ax`` and return the image (for a colour bar)."""
    rows, cols = weights.shape
    finite = weights[np.isfinite(weights)]
    in_unit = finite.size == 0 or (finite.min() >= 0.0 and finite.max() <= 1.0)
    vmin, vmax = (0.0, vmax or 1.0) if in_unit else (float(finite.min()), float(finite.max()))
    image = ax.imshow(
        weights, cmap=cmap, vmin=vmin, vmax=vmax, aspect=aspect, interpolation="nearest"
    )

    ax.xaxis.tick_top()
    ax.xaxis.set_label_position("top")
    ax.set_xticks(range(cols), [display_token(t) for t in src], fontsize=label_fontsize(cols))
    ax.set_yticks(range(rows), [display_token(t) for t in out], fontsize=label_fontsize(rows))
    if _labels_collide(ax, [display_token(t) for t in src]):
        ax.tick_params(axis="x", labelrotation=60)
        for label in ax.get_xticklabels():
            label.set_horizontalalignment("left")
            label.set_rotation_mode("anchor")
    ax.set_xlabel("source", fontsize=9, color="0.35")
    ax.set_ylabel("output", fontsize=9, color="0.35")
    ax.tick_params(length=2)

    if rows <= 40 and cols <= 40:  # thin cell borders help the eye on small matrices
        ax.set_xticks(np.arange(cols + 1) - 0.5, minor=True)
        ax.set_yticks(np.arange(rows + 1) - 0.5, minor=True)
        ax.grid(which="minor", color="white", linewidth=0.6, alpha=0.6)
        ax.tick_params(which="minor", length=0)
    for spine in ax.spines.values():
        spine.set_visible(False)

    if annotate is None:
        annotate = rows <= ANNOTATE_MAX and cols <= ANNOTATE_MAX
    if annotate:
        _annotate(ax, weights, image)
    return image


def _draw_switch(ax: Axes, p_gen: np.ndarray, cmap: str) -> float:
    """A copying model's p_gen (T,), one cell per output row, in a column right of the map
    (1: the word was written from the vocabulary, 0: copied from the source). Returns the
    column's width, as a fraction of the map's."""
    rows, cols = len(p_gen), len(ax.get_xticks())
    width = min(1.0 / max(cols, 1), 0.2)
    strip = ax.inset_axes((1.03, 0.0, width, 1.0))
    image = strip.imshow(
        np.asarray(p_gen, dtype=np.float64)[:, None],
        cmap=cmap,
        vmin=0.0,
        vmax=1.0,
        aspect="auto",
        interpolation="nearest",
    )
    strip.set_xticks([0], ["p_gen"], fontsize=label_fontsize(cols))
    strip.xaxis.tick_top()
    strip.set_yticks([])
    strip.tick_params(length=0)
    for spine in strip.spines.values():
        spine.set_visible(False)
    if rows <= 40:
        _annotate(strip, np.asarray(p_gen, dtype=np.float64)[:, None], image)
    return width


def _labels_collide(ax: Axes, labels: list[str]) -> bool:
    """Whether horizontal x labels would overlap (a rough width estimate per character)."""
    if len(labels) < 2:
        return False
    fig_w, _ = ax.figure.get_size_inches()
    cell = ax.get_position().width * fig_w * 0.85 / len(labels)  # inches; layout trims a bit
    char = label_fontsize(len(labels)) * 0.62 / 72  # average glyph width, inches
    widths = [max(len(t), 1) * char for t in labels]
    return any((a + b) / 2 > 0.9 * cell for a, b in zip(widths, widths[1:]))


def _annotate(ax: Axes, weights: np.ndarray, image) -> None:
    size = 7.5 if max(weights.shape) > 8 else 8.5
    for (i, j), value in np.ndenumerate(weights):
        r, g, b, _ = image.cmap(image.norm(value))
        dark = 0.299 * r + 0.587 * g + 0.114 * b < 0.5
        ax.text(
            j,
            i,
            f"{value:.2f}",
            ha="center",
            va="center",
            fontsize=size,
            color="white" if dark else "black",
        )


def _panel_title(record: AttentionRecord, width: int = 40) -> str:
    text = record.output if len(record.output) <= width else record.output[: width - 1] + "…"
    mark = {True: "✓ ", False: "✗ ", None: ""}[record.correct]
    return mark + text.replace("$", r"\$")


def _check_suffix(path: str | Path) -> Path:
    path = Path(path)
    if path.suffix.lower() not in _FORMATS:
        raise ValueError(f"{path}: heatmaps are saved as .png, .svg or .pdf, not '{path.suffix}'")
    return path


def _save(fig: Figure, path: str | Path) -> None:
    path = _check_suffix(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.suffix.lower() == ".svg":
        # SVG text stays text (searchable, selectable) instead of glyph outlines.
        with matplotlib.rc_context({"svg.fonttype": "none"}):
            fig.savefig(path)
    else:
        fig.savefig(path, dpi=150)
