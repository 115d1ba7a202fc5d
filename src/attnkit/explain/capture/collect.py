"""What a capture keeps of each attention call: the layer and head selection, the maps or their
online aggregates, and the checks at the end of each forward.

Each call is given a layer number (its module and how many calls that module made before it in
this forward: a *site*, numbered in the order of first appearance). Only the layers and heads
asked for are computed. ``online``:

* None: the weights (B, h, T, S) of each chosen call, CPU float32;
* ``"mean"``: only their mean over the chosen heads (B, T, S);
* ``"rollout"``: no map at all; the attention rollout (B, T, T) of each group of self-attention
  layers is multiplied on as each layer runs (:func:`attnkit.explain.rollout.with_residual`), so
  the memory it needs is that of one layer's map, in blocks of queries
  (:func:`attnkit.explain.capture.weights.weight_chunks`), and two (B, T, T) matrices.

Shapes: B batch, H heads (h chosen), T queries, S keys.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence

import torch
from torch import Tensor

from attnkit.errors import CaptureError
from attnkit.explain.capture.modules import describe, group_of
from attnkit.explain.capture.result import CaptureRecord, CaptureResult
from attnkit.explain.capture.weights import AttentionCall, forbids_later, weight_chunks

#: the online modes
ONLINE = (None, "mean", "rollout")


def _indices(values, what: str) -> tuple[int, ...] | None:
    """``values`` (None, an int or a list of ints >= 0) as a tuple without repeats."""
    if values is None:
        return None
    values = [values] if isinstance(values, int) else list(values)
    bad = [v for v in values if isinstance(v, bool) or not isinstance(v, int) or v < 0]
    if bad:
        raise CaptureError(f"{what}={values}: give numbers from 0 ({bad[0]!r} is not one)")
    return tuple(dict.fromkeys(values))


class Collector:
    """Keeps what :func:`attnkit.explain.capture.capture` was asked for, into ``result``."""

    def __init__(self, result: CaptureResult, layers=None, heads=None, online=None):
        if online not in ONLINE:
            raise CaptureError(f"online={online!r}: choose None, 'mean' or 'rollout'")
        self.result = result
        self.layers = _indices(layers, "layers")
        self.heads = _indices(heads, "heads")
        self.online = online
        self.sites: dict[tuple[str, int], int] = {}  # (module name, its call) -> layer
        self.forward = -1
        self._calls: dict[str, int] = {}  # calls per module in this forward

    # ---- forwards --------------------------------------------------------------------------
    def start(self) -> None:
        """A forward begins."""
        self.forward += 1
        self._calls = {}

    def end(self, model_name: str, whole_model: bool) -> None:
        """A forward of the whole model ended without an error: CaptureError when it made no
        attention call capture sees, or when a layer asked for does not exist."""
        if not whole_model:
            return
        if not self._calls:
            raise CaptureError(
                f"capture: {model_name}'s forward made no attention call that capture sees "
                "(F.scaled_dot_product_attention or nn.MultiheadAttention); its attention is "
                "computed another way (an eager implementation: ask it for its own weights)"
            )
        missing = [layer for layer in self.layers or () if layer >= len(self.sites)]
        if missing:
            raise CaptureError(
                f"layers {missing}: {model_name} has {len(self.sites)} attention layers "
                f"(0 to {len(self.sites) - 1}: {self._layer_list()})"
            )

    def _layer_list(self, most: int = 4) -> str:
        names = [f"{i} {describe(n)}" for i, n in enumerate(self.result.layer_names)]
        return ", ".join(names[:most] + (["..."] if len(names) > most else []))

    def site(self, name: str) -> tuple[int, int]:
        """The (layer, call) of the attention call ``name`` is making now."""
        call = self._calls.get(name, 0)
        self._calls[name] = call + 1
        layer = self.sites.setdefault((name, call), len(self.sites))
        if layer == len(self.result.layer_names):
            self.result.layer_names.append(name)
        return layer, call

    # ---- calls -----------------------------------------------------------------------------
    def add_call(self, name: str, call: AttentionCall, kind: str) -> None:
        """An SDPA call of module ``name``: its weights recomputed, for the chosen heads."""
        layer, index = self.site(name)
        if self.layers is not None and layer not in self.layers:
            return
        heads = self._heads(name, layer, call.heads)
        self._check_dropout(name, layer, call.dropout)
        shape = (call.batch, call.queries, call.keys)
        site = (name, layer, index, kind, forbids_later(call))
        self._keep(
            site, call.heads, heads, shape, lambda into: weight_chunks(call, heads, into=into)
        )

    def add_weights(
        self, name: str, weights: Tensor, kind: str, dropout: float, implementation: str = "mha"
    ) -> None:
        """Weights (B, H, T, S) that a call computed itself (nn.MultiheadAttention asked for
        them) or that an attnkit implementation applies (``implementation``: its name)."""
        layer, index = self.site(name)
        if self.layers is not None and layer not in self.layers:
            return
        heads = self._heads(name, layer, weights.size(1))
        self._check_dropout(name, layer, dropout)
        chosen = weights if heads is None else weights[:, list(heads)]
        chosen = torch.nan_to_num(chosen.detach(), nan=0.0)  # a row with no key: zeros
        b, _, t, s = weights.shape
        causal = t == s and not bool(torch.triu(chosen, diagonal=1).any())
        site = (name, layer, index, kind, causal)
        self._keep(
            site, weights.size(1), heads, (b, t, s), lambda into: [(0, chosen)], implementation
        )

    def _heads(self, name: str, layer: int, count: int) -> tuple[int, ...] | None:
        if self.heads is None:
            return None
        missing = [h for h in self.heads if h >= count]
        if missing:
            raise CaptureError(
                f"heads {missing}: layer {layer} ({describe(name)}) has {count} heads "
                f"(0 to {count - 1})"
            )
        return self.heads

    def _check_dropout(self, name: str, layer: int, p: float) -> None:
        if p > 0:
            raise CaptureError(
                f"capture: layer {layer} ({describe(name)}) drops attention weights at random "
                f"(dropout {p:g}), so no weights are exact: call model.eval() first"
            )

    def _keep(
        self,
        site: tuple[str, int, int, str, bool],
        count: int,
        heads: Sequence[int] | None,
        shape: tuple[int, int, int],
        chunks: Callable[[Tensor | None], Iterable[tuple[int, Tensor]]],
        implementation: str = "sdpa",
    ) -> None:
        """Consume the blocks of weights (B, h, t, S) (``chunks(into)``: written into ``into``
        where it can) into a record of ``site`` (name, layer, call, kind, causal) and the
        rollout."""
        name, layer, call, kind, causal = site
        b, t, s = shape
        head_ids = tuple(range(count)) if heads is None else tuple(heads)
        weights = torch.empty(b, len(head_ids), t, s) if self.online is None else None
        mean = torch.empty(b, t, s) if self.online is not None else None
        for start, block in chunks(weights):
            stop = start + block.size(2)
            if weights is None:
                mean[:, start:stop].copy_(block.mean(dim=1))
            elif block.data_ptr() != weights[:, :, start:stop].data_ptr():
                weights[:, :, start:stop].copy_(block)
        record = CaptureRecord(
            name, layer, call, self.forward, kind, causal, count, head_ids, b, t, s
        )
        record.weights = weights
        record.mean = mean if self.online == "mean" else None
        record.implementation = implementation
        self.result.append(record)
        if self.online == "rollout" and kind == "self":
            self._roll(record, mean)

    def _roll(self, record: CaptureRecord, mean: Tensor) -> None:
        """Multiply the rollout of the record's group on by its layer (B, T, T)."""
        from attnkit.explain.rollout import with_residual

        if record.queries != record.keys:
            raise CaptureError(
                f"online='rollout': layer {record.layer} ({describe(record.name)}) attends from "
                f"{record.queries} queries to {record.keys} keys; rollout needs square "
                "self-attention (no key cache)"
            )
        group = group_of(record.name)
        before = self.result.current_rollout(self.forward, group)
        mixed = with_residual(mean)  # (B, T, T)
        if before is not None and before.shape != mixed.shape:
            raise CaptureError(
                f"online='rollout': layer {record.layer} ({describe(record.name)}) is "
                f"{tuple(mixed.shape)}, the layers before it in {describe(group)} "
                f"{tuple(before.shape)}"
            )
        self.result.add_rollout(self.forward, group, mixed if before is None else mixed @ before)
