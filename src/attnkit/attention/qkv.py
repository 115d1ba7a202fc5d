"""Multi-head query/key/value attention, the Transformer's (Vaswani et al. 2017).

The RNN decoders' attentions query a memory with one decoder state; here every position of a
sequence is a query, and the keys and values are projections of a sequence too (the same one for
self-attention, the encoder's output for cross-attention). The score is the scaled dot product of
:mod:`attnkit.attention.scores`, the mask convention is attnkit's one (bool, True = may attend,
broadcastable to (B, H, T, S)), and every call returns ``(context, weights)``.

Two ways to compute the same function, chosen per call:

* **explicit** (``need_weights=True``, or ``fast=False``): scores, :func:`masked_softmax`,
  weighted sum; the weights (B, H, T, S) come back for pictures and alignment scores;
* **fused** (``need_weights=False``, ``fast=True`` and no attention dropout in effect):
  ``F.scaled_dot_product_attention``, which never materialises the weights (evaluation-mode
  teacher forcing, encoding, dropout-free training). Its bool mask has the same meaning as ours.
  It gives NaN for a query row with no allowed key; no row of a Transformer is like that (a
  source holds at least ``</s>``; a causal row sees itself).

Shapes: B batch, T queries, S keys, D model width, H heads, Dh = D / H.
"""

from __future__ import annotations

import torch.nn.functional as F
from torch import Tensor, nn

from attnkit.attention.dropout import dropout
from attnkit.attention.scores import attend, masked_softmax, scaled_dot_scores


class QKVAttention(nn.Module):
    """Multi-head attention with its projections: one (3D, D) input projection, whose rows make
    the queries, keys and values (one matmul for self-attention, as ``nn.MultiheadAttention``
    does), and the output projection."""

    def __init__(self, width: int, heads: int, dropout: float = 0.0):
        super().__init__()
        if width % heads:
            raise ValueError(f"the width ({width}) must be divisible by the heads ({heads})")
        self.heads = heads
        self.width = width
        self.dropout = dropout
        self.in_proj = nn.Linear(width, 3 * width)  # rows: queries, keys, values
        self.out_proj = nn.Linear(width, width)

    def split_heads(self, x: Tensor) -> Tensor:
        """(B, N, D) -> (B, H, N, Dh)."""
        b, n, _ = x.shape
        return x.view(b, n, self.heads, -1).transpose(1, 2)

    def project_queries(self, x: Tensor) -> Tensor:
        """(B, T, D) -> queries (B, H, T, Dh)."""
        d = self.width
        return self.split_heads(F.linear(x, self.in_proj.weight[:d], self.in_proj.bias[:d]))

    def project_keys(self, x: Tensor) -> tuple[Tensor, Tensor]:
        """(B, S, D) -> keys and values, each (B, H, S, Dh): computed once per source batch for
        cross-attention."""
        d = self.width
        kv = F.linear(x, self.in_proj.weight[d:], self.in_proj.bias[d:])  # (B, S, 2D)
        keys, values = kv.chunk(2, dim=-1)
        return self.split_heads(keys), self.split_heads(values)

    def project_all(self, x: Tensor) -> tuple[Tensor, Tensor, Tensor]:
        """(B, N, D) -> queries, keys and values of self-attention, each (B, H, N, Dh), from one
        matmul."""
        q, k, v = self.in_proj(x).chunk(3, dim=-1)
        return self.split_heads(q), self.split_heads(k), self.split_heads(v)

    def forward(
        self,
        x: Tensor,
        keys: Tensor,
        values: Tensor,
        mask: Tensor | None = None,
        need_weights: bool = False,
        fast: bool = True,
    ) -> tuple[Tensor, Tensor | None]:
        """x (B, T, D) queries; keys, values (B, H, S, Dh); mask broadcastable to (B, H, T, S).

        Returns context (B, T, D) and weights (B, H, T, S), or None when they were not asked for
        and the fused path ran.
        """
        return self.attend(self.project_queries(x), keys, values, mask, need_weights, fast)

    def attend(
        self,
        q: Tensor,
        keys: Tensor,
        values: Tensor,
        mask: Tensor | None = None,
        need_weights: bool = False,
        fast: bool = True,
    ) -> tuple[Tensor, Tensor | None]:
        """Projected queries (B, H, T, Dh) -> context (B, T, D), weights (B, H, T, S) or None.

        The fused kernel runs when no weights are wanted and no attention dropout applies (with
        dropout it falls back to an unfused path, slower on a CPU than the explicit one below).
        """
        p = self.dropout if self.training else 0.0
        if fast and not need_weights and p == 0.0:
            context = F.scaled_dot_product_attention(q, keys, values, attn_mask=mask)
            weights = None
        else:
            weights = masked_softmax(scaled_dot_scores(q, keys), mask)  # (B, H, T, S)
            dropped = dropout(weights, p, True) if p else weights
            context = attend(dropped, values)  # (B, H, T, Dh)
            weights = weights if need_weights else None
        b, h, t, dh = context.shape
        context = context.transpose(1, 2).reshape(b, t, h * dh)  # (B, T, D)
        return self.out_proj(context), weights
