"""The exact weights of one attention call, recomputed from the call's own queries, keys and mask.

``F.scaled_dot_product_attention`` returns ``softmax(Q K^T * scale + mask) V`` and never the
weights. They are recomputed here from the same arguments, as the eager implementations compute
them (``matmul(q, k^T) * scale``, the mask added or applied, a softmax over the keys), in float32
(float64 for float64 inputs) whatever the call's dtype:

* ``attn_mask`` bool (True = may attend, attnkit's convention and SDPA's) or additive float,
  broadcastable to (B, H, T, S); ``is_causal``: query i sees keys 0..i (SDPA's top-left
  alignment);
* grouped-query and multi-query attention (``enable_gqa``, Hk < H key heads): query head h
  reads key head h // (H / Hk);
* a query row with no key it may attend to gets zeros, never NaN.

The rows are computed in blocks of queries (:func:`weight_chunks`) of at most
:data:`CHUNK_BYTES` each, so that an aggregate (a mean over heads, a rollout) never holds a whole
(B, H, T, S) map of a long input.

Shapes: B batch, H query heads, Hk key heads, T queries, S keys, E head width.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import torch
from torch import Tensor

from attnkit.errors import CaptureError

#: the most bytes one block of recomputed weights (B, h, t, S) takes; a block's transient peak is
#: about three of them (scores, masked scores, weights)
CHUNK_BYTES = 8 * 2**20


@dataclass
class AttentionCall:
    """One attention call, heads first: ``q`` (B, H, T, E), ``k`` (B, Hk, S, E) with H a multiple
    of Hk, ``mask`` broadcastable to (B, H, T, S) (bool True = may attend, or added to the scores)
    or None, ``causal`` (SDPA's ``is_causal``), ``scale`` and the ``dropout`` probability the call
    applied to its weights."""

    q: Tensor
    k: Tensor
    mask: Tensor | None
    causal: bool
    scale: float
    dropout: float = 0.0

    @property
    def heads(self) -> int:
        return self.q.size(1)

    @property
    def batch(self) -> int:
        return max(self.q.size(0), self.k.size(0))

    @property
    def queries(self) -> int:
        return self.q.size(2)

    @property
    def keys(self) -> int:
        return self.k.size(2)


def _heads_first(x: Tensor) -> Tensor:
    """(T, E) / (B, T, E) / (B, H, T, E) / (N1, N2, ..., H, T, E) -> (B, H, T, E)."""
    if x.dim() == 2:
        return x[None, None]
    if x.dim() == 3:
        return x[:, None]
    return x.reshape(-1, *x.shape[-3:])


def _mask_heads_first(mask: Tensor | None, query: Tensor, keys: int) -> Tensor | None:
    """The mask as it broadcasts against :func:`_heads_first` of ``query``."""
    if mask is None or query.dim() == 4:
        return mask
    if query.dim() < 4:
        return mask if mask.dim() <= 2 else mask.reshape(-1, 1, *mask.shape[-2:])
    full = mask.expand(*query.shape[:-1], keys)  # (N1, ..., H, T, S), a view
    return full.reshape(-1, *full.shape[-3:])


def sdpa_call(
    query: Tensor,
    key: Tensor,
    value: Tensor | None = None,
    attn_mask: Tensor | None = None,
    dropout_p: float = 0.0,
    is_causal: bool = False,
    scale: float | None = None,
    enable_gqa: bool = False,
    **unknown,
) -> AttentionCall:
    """The arguments of ``F.scaled_dot_product_attention`` (same names and order) as an
    :class:`AttentionCall` (``value`` is not needed; ``enable_gqa`` is implied by the key heads).
    CaptureError for an argument this function does not know (a later torch's), whose effect on
    the weights it cannot know either."""
    if unknown:
        raise CaptureError(
            f"capture: F.scaled_dot_product_attention was called with {', '.join(unknown)}, "
            "which capture does not know, so it cannot recompute the weights exactly"
        )
    q, k = _heads_first(query), _heads_first(key)
    mask = _mask_heads_first(attn_mask, query, key.size(-2))
    scale = 1.0 / math.sqrt(query.size(-1)) if scale is None else float(scale)
    return AttentionCall(q, k, mask, bool(is_causal), scale, float(dropout_p))


def chunk_rows(batch: int, heads: int, keys: int, itemsize: int, budget: int) -> int:
    """How many query rows of (batch, heads, rows, keys) weights fit ``budget`` bytes (>= 1)."""
    return max(1, budget // max(1, batch * heads * keys * itemsize))


def compute_dtype(dtype: torch.dtype) -> torch.dtype:
    """float64 for float64 inputs, else float32 (half and bfloat16 calls are recomputed in
    float32)."""
    return torch.float64 if dtype == torch.float64 else torch.float32


def _selected(call: AttentionCall, heads: Sequence[int] | None) -> tuple[Tensor, Tensor]:
    """The queries (B, h, T, E) and transposed keys (B, h, E, S) of the chosen heads, the key
    heads repeated to match the query heads, in the dtype the weights are computed in."""
    q, k = call.q, call.k
    group = call.heads // k.size(1)
    if heads is not None:
        index = torch.as_tensor(list(heads), dtype=torch.long, device=q.device)
        q = q.index_select(1, index)
        k = k.index_select(1, torch.div(index, group, rounding_mode="floor"))
    elif group > 1:
        k = k.repeat_interleave(group, dim=1)  # (B, H, S, E)
    dtype = compute_dtype(q.dtype)
    return q.to(dtype), k.to(dtype).transpose(-2, -1)


def additive_mask(call: AttentionCall, heads: Sequence[int] | None) -> Tensor | None:
    """The call's mask as one to add to the scores (0 where a key may be attended, -inf where
    not), for the chosen heads, in the compute dtype; None where it masks nothing. Masks rarely
    have a head axis, so this is small next to the scores."""
    mask = call.mask
    if mask is None:
        return None
    if heads is not None and mask.dim() >= 3 and mask.size(-3) > 1:  # (H, T, S) counts too
        mask = mask.index_select(-3, torch.as_tensor(list(heads), device=mask.device))
    dtype = compute_dtype(call.q.dtype)
    if mask.dtype == torch.bool:
        if bool(mask.all()):
            return None
        return torch.zeros(mask.shape, dtype=dtype, device=mask.device).masked_fill_(
            ~mask, -math.inf
        )
    return mask.to(dtype)


def _block_mask(mask: Tensor | None, causal: bool, start: int, stop: int, keys: int, device):
    """The additive mask of query rows start..stop-1 (the causal one merged in), or None."""
    part = None
    if mask is not None:
        part = mask[..., start:stop, :] if mask.dim() >= 2 and mask.size(-2) > 1 else mask
    if causal:
        allowed = torch.ones(stop - start, keys, dtype=torch.bool, device=device)
        dtype = compute_dtype(mask.dtype) if mask is not None else torch.float32
        later = torch.zeros(stop - start, keys, dtype=dtype, device=device)
        later.masked_fill_(~allowed.tril(diagonal=start), -math.inf)  # (t, S)
        part = later if part is None else part + later
    return part


def forbids_later(call: AttentionCall) -> bool:
    """No query may weigh a later key: ``is_causal``, or T == S and a mask that masks every key
    after its query (a float mask: with -inf, or with less than half its dtype's lowest value)."""
    if call.causal:
        return True
    t, s = call.queries, call.keys
    if t != s or call.mask is None:
        return False
    mask = call.mask
    allowed = mask if mask.dtype == torch.bool else mask > torch.finfo(mask.dtype).min / 2
    later = torch.ones(t, s, dtype=torch.bool, device=mask.device).triu(1)
    return not bool((allowed & later).any())


def weight_chunks(
    call: AttentionCall,
    heads: Sequence[int] | None = None,
    budget: int | None = None,
    into: Tensor | None = None,
) -> Iterator[tuple[int, Tensor]]:
    """Yield ``(first_row, weights)`` block by block over the queries: weights (B, h, t, S) of
    rows first_row .. first_row + t - 1, for the query heads ``heads`` (all when None), each row
    summing to 1 over the keys (0 where every key is masked). On the call's device, in float32
    (float64 for float64 inputs); no gradient is recorded. ``budget``: the bytes a block may take
    (default :data:`CHUNK_BYTES`). ``into`` (B, h, T, S), when it has that device and dtype,
    receives the weights (each block is then a view of it)."""
    with torch.no_grad():
        q, kt = _selected(call, heads)
        mask = additive_mask(call, heads)
        t_all, s = call.queries, call.keys
        budget = CHUNK_BYTES if budget is None else budget
        rows = chunk_rows(call.batch, q.size(1), s, q.element_size(), budget)
        if into is not None and (into.device, into.dtype) != (q.device, q.dtype):
            into = None
        for start in range(0, t_all, rows):
            stop = min(t_all, start + rows)
            scores = torch.matmul(q[:, :, start:stop], kt).mul_(call.scale)  # (B, h, t, S)
            part = _block_mask(mask, call.causal, start, stop, s, scores.device)
            dead = None
            if part is not None:
                if torch.broadcast_shapes(part.shape, scores.shape) == scores.shape:
                    scores.add_(part)
                else:
                    scores = scores + part
                if bool(torch.isneginf(part).all(dim=-1).any()):  # a row may have no key
                    dead = torch.isneginf(scores.amax(dim=-1, keepdim=True))
            if into is None:
                weights = torch.softmax(scores, dim=-1)
            else:
                weights = torch.softmax(scores, dim=-1, out=into[:, :, start:stop])
            del scores
            if dead is not None:
                weights.masked_fill_(dead, 0.0)
            yield start, weights


def attention_weights(call: AttentionCall, heads: Sequence[int] | None = None) -> Tensor:
    """All of :func:`weight_chunks` at once: (B, h, T, S)."""
    return torch.cat([w for _, w in weight_chunks(call, heads)], dim=2)
