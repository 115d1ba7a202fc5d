"""Multi-head query/key/value attention (Vaswani et al. 2017): one class,
:class:`MultiHeadAttention`, for the RNN decoders' ``multihead`` attention and for every attention
of the Transformer.

The keys and values are projections of a memory (the encoder's states; for the Transformer's
self-attention, the sequence itself), split over H heads; the score is the scaled dot product of
:mod:`attnkit.attention.scores`, the mask convention attnkit's one (bool, True = may attend), and
every call returns ``(context, weights)``. It follows the protocol of every attention module
(:mod:`attnkit.attention.modules`):

* ``project_keys(keys (B, S, Dk))`` -> per-head keys and values, each (B, H, S, Dh), once per
  source batch;
* ``forward(query, keys, projected, mask (B, S))`` -> context (B, T, Dk) and the weights averaged
  over heads (B, T, S) (one step: (B, Dq) -> (B, Dk), (B, S)), so that every attention pictures the
  same way; ``forward_heads`` gives the per-head weights (B, H, T, S).

and adds what self-attention and a cache of keys need: ``project_queries``, ``project_all`` (the
queries, keys and values of one sequence) and ``attend`` (projected queries against projected
keys). Two ways to compute the same function, chosen per call:

* **explicit** (weights wanted, or ``fast=False``): scores, :func:`masked_softmax`, weighted sum;
* **fused** (no weights wanted, ``fast=True`` and no attention dropout in effect):
  ``F.scaled_dot_product_attention``, which never materialises the weights. Its bool mask has the
  same meaning as ours. It gives NaN for a query row with no allowed key; no row of a Transformer
  is like that (a source holds at least ``</s>``; a causal row sees itself).

A module given an ``impl`` (an :class:`~attnkit.attention.exact.AttentionImpl` of
:mod:`attnkit.attention.implementations`: ``chunked``, ``local``, ``linear``, ...) computes with
it instead, through :meth:`MultiHeadAttention.attend_parts`, which takes the mask in two parts (a
key mask and a causal flag) so that no (T, S) mask is built; weights wanted are the
implementation's ``implied_weights``.

Two parameter layouts, so that checkpoints of either use keep their names: the RNN decoders'
(``query_proj``, ``key_proj``, ``value_proj``, ``out_proj``, no biases; the query and memory
widths may differ) and, with ``packed=True``, the Transformer's (one ``in_proj`` of shape (3A, D)
whose rows make the queries, keys and values, one matmul for self-attention as
``nn.MultiheadAttention`` does; ``out_proj``; biases). The layout changes where the projection
weights are stored, never what is computed.

Shapes: B batch, T queries, S keys, Dq query width, Dk key (memory) width, A attention width,
H heads, Dh = A / H.
"""

from __future__ import annotations

import torch.nn.functional as F
from torch import Tensor, nn

from attnkit.attention.base import Attention
from attnkit.attention.dropout import dropout
from attnkit.attention.exact import AttentionImpl, dense_mask
from attnkit.attention.scores import attend, masked_softmax, scaled_dot_scores
from attnkit.errors import ConfigError


class MultiHeadAttention(Attention):
    """Multi-head scaled dot-product attention with its projections; see the module docstring.

    ``MultiHeadAttention(query_dim, key_dim, attn_dim, heads)``: the RNN decoders' layout, the
    context projected back to the key width Dk. ``packed=True`` (query_dim == key_dim ==
    attn_dim): the Transformer's. ``dropout``: on the weights, in training (only where the
    implementation holds them). ``impl``: how to compute it (None: explicit or fused, per call).
    """

    def __init__(
        self,
        query_dim: int,
        key_dim: int,
        attn_dim: int,
        heads: int,
        *,
        packed: bool = False,
        dropout: float = 0.0,
        impl: AttentionImpl | None = None,
    ):
        super().__init__()
        if attn_dim % heads:
            raise ConfigError(
                f"the attention width ({attn_dim}) must be divisible by the heads ({heads}) "
                "(model.attention_dim or a Transformer's model.embedding_dim, by model.heads)"
            )
        if packed and not query_dim == key_dim == attn_dim:
            raise ConfigError(
                f"a packed input projection needs equal widths, got query {query_dim}, "
                f"key {key_dim}, attention {attn_dim}"
            )
        self.heads = heads
        self.attn_dim = attn_dim
        self.dropout = dropout
        self.packed = packed
        if packed:
            self.in_proj = nn.Linear(attn_dim, 3 * attn_dim)  # rows: queries, keys, values
        else:
            self.query_proj = nn.Linear(query_dim, attn_dim, bias=False)
            self.key_proj = nn.Linear(key_dim, attn_dim, bias=False)
            self.value_proj = nn.Linear(key_dim, attn_dim, bias=False)
        self.out_proj = nn.Linear(attn_dim, key_dim, bias=packed)
        self.impl = impl

    def split_heads(self, x: Tensor) -> Tensor:
        """(B, N, A) -> (B, H, N, Dh)."""
        b, n, _ = x.shape
        return x.view(b, n, self.heads, -1).transpose(1, 2)

    def project_queries(self, query: Tensor) -> Tensor:
        """(B, T, Dq) -> queries (B, H, T, Dh)."""
        if self.packed:
            a = self.attn_dim
            return self.split_heads(F.linear(query, self.in_proj.weight[:a], self.in_proj.bias[:a]))
        return self.split_heads(self.query_proj(query))

    def project_keys(self, keys: Tensor) -> tuple[Tensor, Tensor]:
        """(B, S, Dk) -> keys and values, each (B, H, S, Dh): once per source batch."""
        if self.packed:
            a = self.attn_dim
            kv = F.linear(keys, self.in_proj.weight[a:], self.in_proj.bias[a:])  # (B, S, 2A)
            k, v = kv.chunk(2, dim=-1)
        else:
            k, v = self.key_proj(keys), self.value_proj(keys)  # (B, S, A) each
        return self.split_heads(k), self.split_heads(v)

    def project_all(self, x: Tensor) -> tuple[Tensor, Tensor, Tensor]:
        """(B, N, D) -> queries, keys and values of self-attention, each (B, H, N, Dh) (one matmul
        in the packed layout)."""
        if not self.packed:
            return self.project_queries(x), *self.project_keys(x)
        q, k, v = self.in_proj(x).chunk(3, dim=-1)
        return self.split_heads(q), self.split_heads(k), self.split_heads(v)

    def attend(
        self,
        q: Tensor,
        keys: Tensor,
        values: Tensor,
        mask: Tensor | None = None,
        need_weights: bool = True,
        fast: bool = False,
    ) -> tuple[Tensor, Tensor | None]:
        """Projected queries (B, H, T, Dh) against keys and values (B, H, S, Dh); mask
        broadcastable to (B, H, T, S). Returns context (B, T, Dk) and the weights (B, H, T, S), or
        None where none were wanted.

        The fused kernel runs when no weights are wanted, ``fast`` and no attention dropout
        applies (with dropout it falls back to an unfused path, slower on a CPU than the explicit
        one).
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
        return self.merge_heads(context), weights

    def merge_heads(self, context: Tensor) -> Tensor:
        """Per-head context (B, H, T, Dh) -> the output projection of their concatenation
        (B, T, Dk)."""
        b, h, t, dh = context.shape
        return self.out_proj(context.transpose(1, 2).reshape(b, t, h * dh))  # (B, T, Dk)

    def attend_parts(
        self,
        q: Tensor,
        keys: Tensor,
        values: Tensor,
        key_mask: Tensor | None,
        causal: bool,
        need_weights: bool = True,
        fast: bool = False,
    ) -> tuple[Tensor, Tensor | None]:
        """:meth:`attend` with the mask in two parts: ``key_mask`` (B, S) and ``causal`` (query
        t at position t + S - T sees keys up to it). Without an ``impl``, :meth:`attend` with
        the dense mask; with one, the implementation (its implied weights where wanted)."""
        t, s = q.size(-2), keys.size(-2)
        causal = causal and t > 1  # one query, the last position, sees every key
        if self.impl is None:
            mask = dense_mask(key_mask, causal, t, s, q.device)
            return self.attend(q, keys, values, mask, need_weights, fast)
        p = self.dropout if self.training and self.impl.drops_weights else 0.0
        if need_weights:
            weights = self.impl.implied_weights(q, keys, key_mask, causal)  # (B, H, T, S)
            context = attend(dropout(weights, p, True) if p else weights, values)
            return self.merge_heads(context), weights
        context = self.impl(q, keys, values, key_mask, causal, p)  # (B, H, T, Dh)
        return self.merge_heads(context), None

    def forward_heads(
        self,
        query: Tensor,
        projected: tuple[Tensor, Tensor],
        mask: Tensor | None = None,
        need_weights: bool = True,
        fast: bool = False,
    ) -> tuple[Tensor, Tensor | None]:
        """query (B, T, Dq), ``projected`` = ``project_keys(keys)``, mask (B, S) -> context
        (B, T, Dk), per-head weights (B, H, T, S) (None where not wanted; see :meth:`attend`)."""
        keys_h, values_h = projected
        q = self.project_queries(query)
        return self.attend_parts(q, keys_h, values_h, mask, False, need_weights, fast)

    def context_from_weights(self, weights: Tensor, keys: Tensor, projected=None) -> Tensor:
        """Given weights (B, T, S) (or (B, S)) used by every head over its values -> context
        (B, T, Dk) (or (B, Dk)), through the output projection as :meth:`attend` does."""
        one_step = weights.dim() == 2
        if one_step:
            weights = weights.unsqueeze(1)
        _, values = self.project_keys(keys) if projected is None else projected  # (B, H, S, Dh)
        context = attend(weights.unsqueeze(1).to(values.dtype), values)  # (B, H, T, Dh)
        b, h, t, dh = context.shape
        context = self.out_proj(context.transpose(1, 2).reshape(b, t, h * dh))  # (B, T, Dk)
        return context.squeeze(1) if one_step else context

    def forward(
        self,
        query: Tensor,
        keys: Tensor,
        projected=None,
        mask: Tensor | None = None,
        position: int = 0,
    ):
        """The protocol of every attention: query (B, T, Dq) or one step (B, Dq) -> context
        (B, T, Dk), weights averaged over heads (B, T, S) (or (B, Dk), (B, S)). ``position`` is
        not read (content alone decides)."""
        one_step = query.dim() == 2
        if one_step:
            query = query.unsqueeze(1)
        if projected is None:
            projected = self.project_keys(keys)
        context, weights = self.forward_heads(query, projected, mask)
        weights = weights.mean(dim=1)  # (B, T, S)
        if one_step:
            return context.squeeze(1), weights.squeeze(1)
        return context, weights
