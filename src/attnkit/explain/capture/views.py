"""Captured attention in attnkit's picture types: an :class:`~attnkit.viz.AttentionRecord` of one
batch element (its per-head maps (T, L, h, S), the layer and head choice of ``show()``) and the
heatmap of one layer and head (:func:`attnkit.viz.plot_heatmap`).

Shapes: L layers, h heads kept, T queries, S keys.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

from attnkit.errors import CaptureError
from attnkit.explain.capture.modules import describe


def _labels(tokens: Sequence[str] | None, count: int, what: str) -> list[str]:
    """The axis labels: ``tokens`` (one per position) or the positions themselves."""
    if tokens is None:
        return [str(i) for i in range(count)]
    if len(tokens) != count:
        raise CaptureError(f"{what}: {len(tokens)} given for {count} positions")
    return [str(t) for t in tokens]


def _check_index(index: int, batch: int) -> None:
    if not 0 <= index < batch:
        raise CaptureError(f"index {index}: the batch holds {batch} inputs (0 to {batch - 1})")


def attention_record(
    result,
    index: int = 0,
    group: str | None = None,
    kind: str | None = None,
    forward: int = -1,
    source_tokens: Sequence[str] | None = None,
    output_tokens: Sequence[str] | None = None,
):
    """See :meth:`attnkit.explain.capture.CaptureResult.record`."""
    from attnkit.viz.records import AttentionRecord

    records = result.select(None, group, forward)
    if kind is None:
        kind = "self" if any(r.kind == "self" for r in records) else "cross"
    chosen = [r for r in records if r.kind == kind and r.weights is not None]
    if not chosen:
        why = f" (online={result.online!r} keeps none)" if result.online else ""
        raise CaptureError(f"record: no {kind}-attention maps were kept{why}")
    result._one_shape(chosen, "record")
    _check_index(index, chosen[0].batch)
    heads = torch.stack([r.weights[index] for r in chosen], dim=1)  # (h, L, T, S)
    heads = heads.permute(2, 1, 0, 3).double().numpy()  # (T, L, h, S)
    src = _labels(source_tokens, chosen[0].keys, "source_tokens")
    out = _labels(output_tokens, chosen[0].queries, "output_tokens")
    rollout = None
    if kind == "self" and len({r.group for r in chosen}) == 1:
        rollout = result.rollout(chosen[0].group, forward)[index].double().numpy()
    return AttentionRecord(
        " ".join(src),
        src,
        " ".join(out),
        out,
        heads.mean(axis=(1, 2)),
        heads=heads,
        rollout=rollout,
    )


def plot_layer(
    result,
    layer: int,
    head: int | None = None,
    path_or_ax=None,
    index: int = 0,
    forward: int = -1,
    source_tokens: Sequence[str] | None = None,
    output_tokens: Sequence[str] | None = None,
):
    """See :meth:`attnkit.explain.capture.CaptureResult.plot`."""
    from pathlib import Path

    from attnkit.viz.heatmap import plot_heatmap
    from attnkit.viz.records import AttentionRecord

    found = [r for r in result.select(None, None, forward) if r.layer == layer]
    if not found or found[0].weights is None:
        kept = sorted(
            {r.layer for r in result.select(None, None, forward) if r.weights is not None}
        )
        raise CaptureError(
            f"plot: layer {layer} has no kept weights; kept layers: {kept or 'none'}"
        )
    record = found[0]
    _check_index(index, record.batch)
    if head is None:
        weights = record.weights[index].mean(dim=0)  # (T, S)
        title = f"layer {layer} ({describe(record.name)}), mean of its heads"
    elif head in record.head_ids:
        weights = record.weights[index, record.head_ids.index(head)]  # (T, S)
        title = f"layer {layer} ({describe(record.name)}), head {head}"
    else:
        raise CaptureError(f"plot: head {head} was not kept; kept heads: {list(record.head_ids)}")
    src = _labels(source_tokens, record.keys, "source_tokens")
    out = _labels(output_tokens, record.queries, "output_tokens")
    picture = AttentionRecord(" ".join(src), src, " ".join(out), out, weights.double().numpy())
    if path_or_ax is None or isinstance(path_or_ax, (str, Path)):
        return plot_heatmap(picture, path=path_or_ax, title=title)
    return plot_heatmap(picture, ax=path_or_ax, title=title)
