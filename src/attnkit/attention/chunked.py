"""``chunked``: FlashAttention's algorithm (Dao et al. 2022) in plain torch. Exact attention whose
memory grows linearly with the length.

The keys are read in tiles of ``chunk`` columns. For each query row the forward keeps a running
maximum m, a running sum l of exp(score - m) and a running weighted sum of the values; when a
tile raises the maximum, what was summed so far is rescaled by exp(m_old - m_new) (the online
softmax, Milakov & Gimelshein 2018). At the end the context is the weighted sum over l, and
L = m + log l (the log of the softmax's denominator) is kept per row. Nothing of size (T, S) is
ever held: one (T, chunk) tile at a time.

The backward recomputes each tile's weights P = exp(scores - L) from q, k and L instead of
storing them (:class:`ChunkedFunction`, a ``torch.autograd.Function``), with
D = rowsum(dO * O): dV = P^T dO, dP = dO V^T, dS = P * (dP - D), dQ = dS K / sqrt(Dh),
dK = dS^T Q / sqrt(Dh) (FlashAttention's Algorithm 4). Its memory is linear in the length too.

Shapes: B batch, H heads, T queries, S keys, Dh width per head, C the chunk (tile) width.
"""

from __future__ import annotations

import math

import torch
from torch import Tensor

from attnkit.attention.exact import AttentionImpl
from attnkit.errors import ConfigError


def tile_mask(
    key_mask: Tensor | None, causal: bool, t: int, s: int, start: int, stop: int, device
) -> Tensor | None:
    """The mask of key columns [start, stop): (B or 1, 1, T or 1, C) bool, None if all allowed."""
    mask = None if key_mask is None else key_mask[:, None, None, start:stop]  # (B, 1, 1, C)
    if causal:
        rows = torch.arange(t, device=device)[:, None] + (s - t)  # (T, 1): each query's position
        order = (torch.arange(start, stop, device=device)[None, :] <= rows)[None, None]
        mask = order if mask is None else mask & order  # (B, 1, T, C)
    return mask


def _scores(q: Tensor, k_tile: Tensor, allowed: Tensor | None, scale: float) -> Tensor:
    scores = (q @ k_tile.transpose(-1, -2)) * scale  # (B, H, T, C)
    return scores if allowed is None else scores.masked_fill(~allowed, -math.inf)


def chunked_forward(
    q: Tensor, k: Tensor, v: Tensor, key_mask: Tensor | None, causal: bool, chunk: int
) -> tuple[Tensor, Tensor]:
    """The online-softmax forward: context (B, H, T, Dh) and L = log-sum-exp (B, H, T, 1)
    (+inf on a row with no key allowed, whose context is zeros)."""
    t, s = q.size(-2), k.size(-2)
    scale = q.size(-1) ** -0.5
    top = q.new_full((*q.shape[:-1], 1), -math.inf)  # m (B, H, T, 1)
    total = q.new_zeros(top.shape)  # l
    acc = q.new_zeros((*q.shape[:-1], v.size(-1)))  # (B, H, T, Dh)
    for start in range(0, s, chunk):
        stop = min(start + chunk, s)
        allowed = tile_mask(key_mask, causal, t, s, start, stop, q.device)
        scores = _scores(q, k[..., start:stop, :], allowed, scale)  # (B, H, T, C)
        new_top = torch.maximum(top, scores.amax(-1, keepdim=True))
        safe = new_top.masked_fill(new_top == -math.inf, 0.0)  # a row with nothing seen yet
        weights = torch.exp(scores - safe)  # masked: exp(-inf) = 0
        rescale = torch.exp(top - safe)  # 0 where nothing was summed before
        total = total * rescale + weights.sum(-1, keepdim=True)
        acc = acc * rescale + weights @ v[..., start:stop, :]
        top = new_top
    empty = total == 0
    context = acc / total.masked_fill(empty, 1.0)
    lse = torch.where(empty, math.inf, top + torch.log(total.masked_fill(empty, 1.0)))
    return context, lse


class ChunkedFunction(torch.autograd.Function):
    """Forward by :func:`chunked_forward`; backward by recomputing each tile's weights."""

    @staticmethod
    def forward(ctx, q, k, v, key_mask, causal, chunk):
        context, lse = chunked_forward(q, k, v, key_mask, causal, chunk)
        ctx.save_for_backward(q, k, v, context, lse, key_mask)
        ctx.causal, ctx.chunk = causal, chunk
        return context

    @staticmethod
    def backward(ctx, d_context):
        q, k, v, context, lse, key_mask = ctx.saved_tensors
        t, s = q.size(-2), k.size(-2)
        scale = q.size(-1) ** -0.5
        delta = (d_context * context).sum(-1, keepdim=True)  # D (B, H, T, 1)
        dq, dk, dv = torch.zeros_like(q), torch.empty_like(k), torch.empty_like(v)
        for start in range(0, s, ctx.chunk):
            stop = min(start + ctx.chunk, s)
            allowed = tile_mask(key_mask, ctx.causal, t, s, start, stop, q.device)
            k_tile, v_tile = k[..., start:stop, :], v[..., start:stop, :]
            weights = torch.exp(_scores(q, k_tile, allowed, scale) - lse)  # P (B, H, T, C)
            dv[..., start:stop, :] = weights.transpose(-1, -2) @ d_context
            d_scores = weights * (d_context @ v_tile.transpose(-1, -2) - delta)  # dS
            dq += (d_scores @ k_tile) * scale
            dk[..., start:stop, :] = (d_scores.transpose(-1, -2) @ q) * scale
        return dq, dk, dv, None, None, None


class ChunkedAttention(AttentionImpl):
    """Exact attention in key tiles of ``chunk`` columns; see the module docstring."""

    name = "chunked"

    def __init__(self, chunk: int = 128):
        super().__init__()
        if chunk < 1:
            raise ConfigError(f"model.attention_chunk: must be at least 1, got {chunk}")
        self.chunk = chunk

    def forward(self, q, k, v, key_mask=None, causal=False, p=0.0):
        return ChunkedFunction.apply(q, k, v, key_mask, causal, self.chunk)
