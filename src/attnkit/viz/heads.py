"""A Transformer's attention, layer by layer and head by head.

A record of a Transformer holds ``heads`` (T, L, H, S), every decoder layer's and head's
cross-attention; its ``weights`` are their mean. :func:`choose_map` picks what one picture shows
(one head, one layer's mean over its heads, or the mean of all); :func:`plot_head_grid` draws
every layer and head at once (rows = layers, columns = heads). Layers and heads are numbered from
1 here, as people count them (the arrays count from 0).
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

from matplotlib.figure import Figure

from attnkit.errors import AttnkitError
from attnkit.viz.heatmap import plot_heatmap_grid
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
