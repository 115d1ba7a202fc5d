"""Ways to compute multi-head attention from projected queries, keys and values: the protocol
(:class:`AttentionImpl`), the mask they share, and the two that hold the whole score matrix.

Every implementation maps q (B, H, T, Dh), k and v (B, H, S, Dh) to a context (B, H, T, Dh)
under one mask, given in two parts so that an implementation never has to build a (T, S) matrix
to read it:

* ``key_mask`` (B, S) bool, True = may attend (padding), or None;
* ``causal``: query t sits at position t + S - T (the last T of S positions: teacher forcing has
  T = S, a decoding step with a cache T = 1) and sees the keys at or before it.

:func:`dense_mask` turns the two into the (B, 1, T, S) mask of :func:`masked_softmax`. A query
row with no key allowed gets a context of zeros (attnkit's convention), never NaN.

* ``explicit``: softmax of the full score matrix, the reference; its weights are what
  :meth:`AttentionImpl.implied_weights` returns for every exact implementation. It estimates the
  bytes of its score matrices before allocating them and refuses, in one line naming ``chunked``
  and ``local``, a length that would not fit in the machine's memory.
* ``sdpa``: ``F.scaled_dot_product_attention`` (its flash / memory-efficient / math kernel, as
  the device and dtype allow).

Shapes: B batch, H heads, T queries, S keys, Dh width per head.
"""

from __future__ import annotations

import os

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from attnkit.attention.dropout import dropout
from attnkit.attention.scores import attend, masked_softmax, scaled_dot_scores
from attnkit.errors import ConfigError

#: the implementations whose memory grows linearly with the length (named when refusing)
LINEAR_MEMORY = "chunked or local"


def dense_mask(key_mask: Tensor | None, causal: bool, t: int, s: int, device=None) -> Tensor | None:
    """key_mask (B, S) and ``causal`` -> a bool mask (B, 1, T, S) (or (T, S) without a key mask),
    None when everything may be attended to."""
    mask = None if key_mask is None else key_mask[:, None, None, :]  # (B, 1, 1, S)
    if causal:
        device = key_mask.device if key_mask is not None else device
        order = torch.ones(t, s, dtype=torch.bool, device=device).tril(s - t)  # (T, S)
        mask = order if mask is None else mask & order
    return mask


def rows_allowed(key_mask: Tensor | None, causal: bool, t: int, s: int, device) -> Tensor | None:
    """(B or 1, 1, T, 1) bool: whether a query row may attend to any key; None when all may."""
    seen = None
    if key_mask is not None:
        seen = key_mask.any(-1)[:, None, None, None].expand(-1, 1, t, 1)  # (B, 1, T, 1)
    if causal and t > s:  # rows before the first key see nothing
        order = (torch.arange(t, device=device) >= t - s)[None, None, :, None]  # (1, 1, T, 1)
        seen = order if seen is None else seen & order
    return seen


def machine_bytes(device: torch.device) -> int:
    """The memory a tensor on ``device`` may use at most: the GPU's total, or the host's RAM."""
    if device.type == "cuda":
        return torch.cuda.get_device_properties(device).total_memory
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):  # no sysconf (Windows): do not refuse
        return 1 << 62


def score_bytes(q: Tensor, k: Tensor, matrices: int = 3) -> int:
    """Bytes of ``matrices`` (B, H, T, S) matrices in q's dtype: the scores, the masked copy and
    the weights of :func:`masked_softmax`, a lower bound on what the explicit path holds."""
    b, h, t, _ = q.shape
    return matrices * b * h * t * k.size(-2) * q.element_size()


class AttentionImpl(nn.Module):
    """One way to compute attention; see the module docstring. Subclasses set ``name`` and
    implement :meth:`forward`."""

    name = ""
    #: whether it computes softmax(q k^T / sqrt(Dh)) v itself (up to rounding)
    exact = True
    #: whether it needs queries and keys of one sequence (positions aligned): a Transformer uses
    #: it for self-attention and keeps its default for cross-attention
    self_only = False
    #: whether it drops attention weights in training (the others never hold them)
    drops_weights = False
    #: whether it computes through ``F.scaled_dot_product_attention`` (capture sees that call;
    #: the others are captured from their ``implied_weights``)
    calls_sdpa = False

    def forward(
        self,
        q: Tensor,
        k: Tensor,
        v: Tensor,
        key_mask: Tensor | None = None,
        causal: bool = False,
        p: float = 0.0,
    ) -> Tensor:
        """q (B, H, T, Dh), k and v (B, H, S, Dh) -> context (B, H, T, Dh); ``p``: attention
        dropout, read only where :attr:`drops_weights`."""
        raise NotImplementedError

    def implied_weights(
        self, q: Tensor, k: Tensor, key_mask: Tensor | None = None, causal: bool = False
    ) -> Tensor:
        """The (B, H, T, S) matrix W with forward(q, k, v) = W v, built in full (short inputs:
        for pictures). The exact implementations' is softmax of the scaled scores."""
        check_fits(q, k, self.name)
        mask = dense_mask(key_mask, causal, q.size(-2), k.size(-2), q.device)
        return masked_softmax(scaled_dot_scores(q, k), mask)  # (B, H, T, S)


def check_fits(q: Tensor, k: Tensor, name: str, limit: int | None = None) -> None:
    """ConfigError when the (B, H, T, S) score matrices would not fit in ``limit`` bytes (the
    device's memory by default); estimated before anything is allocated."""
    need = score_bytes(q, k)
    if need < 1 << 28:  # under 256 MiB: never worth asking the machine
        return
    limit = machine_bytes(q.device) if limit is None else limit
    if need > limit:
        b, h, t, _ = q.shape
        where = "of the GPU" if q.device.type == "cuda" else "of this machine's memory"
        raise ConfigError(
            f"model.attention_impl {name}: a {t} x {k.size(-2)} score matrix for batch {b} and "
            f"{h} heads needs at least {need / 2**30:.1f} GiB, more than the "
            f"{limit / 2**30:.1f} GiB {where}; use {LINEAR_MEMORY} "
            "(memory linear in the length)"
        )


class ExplicitAttention(AttentionImpl):
    """The reference: softmax of the full score matrix, weights available."""

    name = "explicit"
    drops_weights = True

    def __init__(self, limit: int | None = None):
        super().__init__()
        self.limit = limit  # bytes the score matrices may take (None: the device's memory)

    def weights(
        self, q: Tensor, k: Tensor, key_mask: Tensor | None = None, causal: bool = False
    ) -> Tensor:
        """(B, H, T, S) attention weights, after the memory check."""
        check_fits(q, k, self.name, self.limit)
        mask = dense_mask(key_mask, causal, q.size(-2), k.size(-2), q.device)
        return masked_softmax(scaled_dot_scores(q, k), mask)

    def forward(self, q, k, v, key_mask=None, causal=False, p=0.0):
        weights = self.weights(q, k, key_mask, causal)
        return attend(dropout(weights, p, True) if p else weights, v)  # (B, H, T, Dh)


class SdpaAttention(AttentionImpl):
    """``F.scaled_dot_product_attention``; rows with no key allowed give zeros, not its NaN."""

    name = "sdpa"
    drops_weights = True
    calls_sdpa = True

    def forward(self, q, k, v, key_mask=None, causal=False, p=0.0):
        t, s = q.size(-2), k.size(-2)
        causal = causal and t > 1  # one query, the last position, sees every key
        # the lightest mask that says it: torch's own causal flag, or a key mask (B, 1, 1, S)
        # (O(S) memory; a dense (T, S) one only when both apply)
        plain_causal = causal and key_mask is None and t == s
        mask = None if plain_causal else dense_mask(key_mask, causal, t, s, q.device)
        seen = rows_allowed(key_mask, causal, t, s, q.device)  # (B, 1, T, 1) or None
        if seen is not None:
            seen = seen if causal else seen[:, :, :1]  # (B, 1, 1, 1): per batch row
            mask = mask | ~seen  # such a row attends anywhere (finite), then is zeroed
        context = F.scaled_dot_product_attention(
            q, k, v, attn_mask=mask, dropout_p=p, is_causal=plain_causal
        )
        return context if seen is None else context * seen
