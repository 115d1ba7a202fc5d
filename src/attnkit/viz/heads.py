"""A Transformer's attention, layer by layer and head by head.

A record of a Transformer holds ``heads`` (T, L, H, S), every decoder layer's and head's
cross-attention; its ``weights`` are their mean. :func:`choose_map` picks what one picture shows
(one head, one layer's mean over its heads, or the mean of all); :func:`plot_head_grid` draws
every layer and head at once (rows = layers, columns = heads); :func:`plot_score_grids` draws one
number per layer and head (the head summaries of :mod:`attnkit.explain.head_summary`) as a grid
per score. Layers and heads are numbered from 1 here, as people count them (the arrays count from
0).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from pathlib import Path

import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from attnkit.errors import AttnkitError
from attnkit.viz.heatmap import _save, plot_heatmap_grid
from attnkit.viz.records import AttentionRecord


def choose_map(record: AttentionRecord, layer: int | None, head: int | None) -> AttentionRecord:
    """A copy of ``record`` whose weights are layer ``layer``'s head ``head`` (1-based), the
    mean over that layer's heads (``head`` None), head ``head`` averaged over the layers
    (``layer`` None), or the mean of all (both None). AttnkitError for a record without heads or
    a number out of range."""
    if layer is None and head is None:
        return record
    if record.heads is None:
        raise AttnkitError(
            "--layer/--head: this model has no layers of attention heads (an RNN model); they "
            "are a Transformer's"
        )
    n_layers, n_heads = record.layers_and_heads
    for name, value, count in (("layer", layer, n_layers), ("head", head, n_heads)):
        if value is not None and not 1 <= value <= count:
            raise AttnkitError(f"--{name} {value}: the model has {name}s 1 to {count}")
    heads = record.heads  # (T, L, H, S)
    chosen = heads[:, layer - 1] if layer is not None else heads.mean(axis=1)  # (T, H, S)
    weights = chosen[:, head - 1] if head is not None else chosen.mean(axis=1)  # (T, S)
    return dataclasses.replace(record, weights=weights, heads=None)


def map_title(layer: int | None, head: int | None) -> str:
    """What :func:`choose_map` showed, in words."""
    if layer is None and head is None:
        return "mean of all layers and heads"
    if head is None:
        return f"layer {layer}, mean of its heads"
    if layer is None:
        return f"head {head}, mean over the layers"
    return f"layer {layer}, head {head}"


def plot_head_grid(record: AttentionRecord, path: str | Path | None) -> Figure:
    """Every layer (rows) and head (columns) of ``record`` in one figure, on one colour scale,
    saved to ``path`` (.png, .svg or .pdf) when given."""
    if record.heads is None:
        raise AttnkitError("--grid: this model has no layers of attention heads (an RNN model)")
    n_layers, n_heads = record.layers_and_heads
    panels, titles = [], []
    for layer in range(1, n_layers + 1):
        for head in range(1, n_heads + 1):
            panels.append(choose_map(record, layer, head))
            titles.append(f"layer {layer} · head {head}")
    return plot_heatmap_grid(panels, path, cols=n_heads, titles=titles)


def plot_score_grids(
    grids: Mapping[str, np.ndarray],
    path: str | Path | None = None,
    first: int = 1,
    title: str | None = None,
    limits: Mapping[str, tuple[float, float]] | None = None,
) -> Figure:
    """One panel per entry of ``grids`` (its title -> an (L, H) array of one score per layer
    and head): layers as rows, heads as columns (numbered from ``first``), each panel on its own
    colour scale (``limits``: title -> (low, high), else the array's range), saved to ``path``
    (.png, .svg or .pdf) when given."""
    if not grids:
        raise AttnkitError("plot_score_grids: no scores to draw")
    layers, heads = next(iter(grids.values())).shape
    cols = min(len(grids), 3)
    rows = -(-len(grids) // cols)
    cell = (max(2.6, 0.35 * heads + 1.4), max(2.0, 0.3 * layers + 1.0))
    fig = Figure(figsize=(cell[0] * cols, cell[1] * rows + 0.4), dpi=100, layout="constrained")
    FigureCanvasAgg(fig)
    axes = fig.subplots(rows, cols, squeeze=False)
    limits = limits or {}
    for ax, (name, grid) in zip(axes.flat, grids.items()):
        low, high = limits.get(name, (float(np.min(grid)), float(np.max(grid))))
        image = ax.imshow(grid, cmap="viridis", vmin=low, vmax=high, aspect="auto")
        ax.set_title(name, fontsize=10)
        ax.set_xlabel("head")
        ax.set_ylabel("layer")
        for axis, count in ((ax.xaxis, heads), (ax.yaxis, layers)):
            ticks = np.arange(0, count, max(1, count // 12))
            axis.set_ticks(ticks, [str(t + first) for t in ticks])
        fig.colorbar(image, ax=ax, fraction=0.05, pad=0.02)
    for ax in list(axes.flat)[len(grids) :]:
        ax.set_axis_off()
    if title:
        fig.suptitle(title, fontsize=11)
    if path is not None:
        _save(fig, path)
    return fig
