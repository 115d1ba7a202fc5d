"""``local``: sliding-window attention with optional global tokens (Longformer's pattern,
Beltagy et al. 2020), memory linear in the length.

The query at position i sees the keys j with |i - j| <= w (``window``: the half width), and
only j <= i when ``causal``. With ``global_tokens`` = g, the first g positions are global: every
query sees them, and they see every position. The padding mask applies on top, as everywhere.

Computed in blocks of C = min(w, T) queries: a block reads the C + 2w keys its rows can reach
(C + w when causal), gathered once, plus the g global keys; the scores are (T / C) x C x (C + 2w
+ g): linear in T for a fixed window. The g global query rows attend to all S keys: g x S, linear
too. :meth:`SlidingWindowAttention.implied_weights` builds the same mask densely on short inputs;
the forward equals softmax under that mask, exactly (the tests hold it to 1e-5 against
``explicit`` with the dense mask, forward and gradients).

Shapes: B batch, H heads, T queries, S keys, Dh width per head, N blocks, C block width,
W keys a block reads.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor

from attnkit.attention.exact import AttentionImpl, dense_mask
from attnkit.attention.scores import masked_softmax, scaled_dot_scores
from attnkit.errors import ConfigError


def band_mask(t: int, s: int, window: int, global_tokens: int, device=None) -> Tensor:
    """(T, S) bool: the window |i - j| <= w around each query's position i (its row + S - T),
    or a global position on either side."""
    rows = torch.arange(t, device=device)[:, None] + (s - t)  # (T, 1)
    cols = torch.arange(s, device=device)[None, :]  # (1, S)
    band = (cols - rows).abs() <= window
    if global_tokens:
        band = band | (cols < global_tokens) | (rows < global_tokens)
    return band


class SlidingWindowAttention(AttentionImpl):
    """Sliding-window attention of half width ``window`` with ``global_tokens`` global positions;
    see the module docstring. ``strict``: refuse an input no longer than the window (it would be
    full attention at a window's cost); a Transformer, whose batches vary, checks its configured
    lengths instead."""

    name = "local"
    exact = False
    self_only = True

    def __init__(self, window: int, global_tokens: int = 0, strict: bool = True):
        super().__init__()
        if window < 1:
            raise ConfigError(f"model.attention_window: must be at least 1, got {window}")
        if global_tokens < 0:
            raise ConfigError(f"model.global_tokens: must be at least 0, got {global_tokens}")
        self.window, self.global_tokens, self.strict = window, global_tokens, strict

    def check_length(self, s: int) -> None:
        if self.strict and self.window >= s:
            raise ConfigError(
                f"model.attention_window: {self.window} is not smaller than the input's {s} "
                f"positions (every key would be in the window: use explicit or chunked)"
            )

    def implied_weights(self, q, k, key_mask=None, causal=False):
        t, s = q.size(-2), k.size(-2)
        mask = band_mask(t, s, self.window, min(self.global_tokens, s), q.device)  # (T, S)
        extra = dense_mask(key_mask, causal, t, s, q.device)
        mask = mask if extra is None else mask & extra
        return masked_softmax(scaled_dot_scores(q, k), mask)  # (B, H, T, S)

    def forward(self, q, k, v, key_mask=None, causal=False, p=0.0):
        t, s = q.size(-2), k.size(-2)
        self.check_length(s)
        g = min(self.global_tokens, s)
        context = self._banded(q, k, v, key_mask, causal, g)  # (B, H, T, Dh)
        rows = max(0, min(t, g - (s - t)))  # the global query rows: positions below g
        if rows:
            mask = None if key_mask is None else key_mask[:, None, None, :]  # (B, 1, 1, S)
            if causal:
                order = torch.ones(rows, s, dtype=torch.bool, device=q.device).tril(s - t)
                mask = order if mask is None else mask & order  # (B, 1, rows, S)
            weights = masked_softmax(scaled_dot_scores(q[..., :rows, :], k), mask)
            context = torch.cat([weights @ v, context[..., rows:, :]], dim=-2)
        return context

    def _banded(self, q, k, v, key_mask, causal, g) -> Tensor:
        """Every row's context from its window and the global keys: (B, H, T, Dh)."""
        b, h, t, d = q.shape
        s, w = k.size(-2), self.window
        c = max(1, min(w, t))
        n = -(-t // c)
        blocks = F.pad(q, (0, 0, 0, n * c - t)).view(b, h, n, c, d)  # (B, H, N, C, Dh)
        pos = (torch.arange(n * c, device=q.device) + (s - t)).view(n, c)  # query positions
        width = c + w if causal else c + 2 * w
        idx = pos[:, :1] - w + torch.arange(width, device=q.device)  # (N, W) key positions
        inside = (idx >= 0) & (idx < s)
        idx = idx.clamp(0, s - 1)
        near = (idx[:, None, :] - pos[:, :, None]).abs() <= w  # (N, C, W)
        allowed = inside[:, None, :] & near & (idx[:, None, :] >= g)  # globals: own columns
        if causal:
            allowed = allowed & (idx[:, None, :] <= pos[:, :, None])
        allowed = allowed[None, None]  # (1, 1, N, C, W)
        keys, values = k[:, :, idx], v[:, :, idx]  # (B, H, N, W, Dh)
        if key_mask is not None:
            allowed = allowed & key_mask[:, idx][:, None, :, None, :]  # (B, 1, N, C, W)
        scores = scaled_dot_scores(blocks, keys)  # (B, H, N, C, W)
        if g:
            seen = torch.ones(n, c, g, dtype=torch.bool, device=q.device)
            if causal:
                seen = torch.arange(g, device=q.device)[None, None, :] <= pos[:, :, None]
            seen = seen[None, None]  # (1, 1, N, C, G)
            if key_mask is not None:
                seen = seen & key_mask[:, None, None, None, :g]
            scores = torch.cat([scores, scaled_dot_scores(blocks, k[:, :, None, :g])], -1)
            rows = max(allowed.size(0), seen.size(0))  # B, or 1 without a key mask
            allowed = torch.cat(
                [allowed.expand(rows, -1, -1, -1, -1), seen.expand(rows, -1, -1, -1, -1)], -1
            )
            values = torch.cat([values, v[:, :, None, :g].expand(-1, -1, n, -1, -1)], -2)
        context = masked_softmax(scores, allowed) @ values  # (B, H, N, C, Dh)
        return context.reshape(b, h, n * c, d)[:, :, :t]
