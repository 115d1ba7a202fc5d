"""Attention through a feature map, time and memory linear in the length: ``linear``
(Katharopoulos et al. 2020) and ``performer`` (FAVOR+, Choromanski et al. 2021).

Both replace exp(q . k / sqrt(Dh)) by phi(q) . phi(k) for a feature map phi, so that

    context_i = phi(q_i)^T (sum_j phi(k_j) v_j^T) / (phi(q_i)^T sum_j phi(k_j))

costs O(S F Dh) instead of O(T S): the sums over keys are computed once (F features). Causal
attention needs, per query, the sums over the keys up to its position: prefix sums, computed here
chunk by chunk (within a chunk of C queries a C x C masked product, across chunks a running
state (F, Dh)), so memory stays linear in the length without the (S, F, Dh) tensor of a plain
cumulative sum. Padded keys get phi = 0. A row that sees no key gets zeros.

* ``linear``: phi(x) = elu(x) + 1 (positive), applied to q and k as they are. It is a different
  attention, not an estimate of softmax: its weights are phi(q_i) . phi(k_j) normalised.
* ``performer``: positive random features, phi(x) = exp(w_r . x - |x|^2 / 2) / sqrt(F) for
  x = q / Dh^(1/4) (or k) and F random directions w_r in orthogonal blocks (norms drawn from the
  chi distribution), an unbiased estimate of exp(q . k / sqrt(Dh)): the error falls as F grows.
  The directions come from a generator seeded with ``seed`` (a buffer outside the state dict:
  the same seed gives the same features, and a checkpoint does not change).

:meth:`KernelAttention.implied_weights` builds the (T, S) matrix of normalised phi(q) . phi(k),
exactly the weights the forward applies (for pictures of short inputs).

Shapes: B batch, H heads, T queries, S keys, Dh width per head, F features, C chunk width.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import Tensor

from attnkit.attention.exact import AttentionImpl
from attnkit.errors import ConfigError


def _masked(features: Tensor, key_mask: Tensor | None) -> Tensor:
    """Key features (B, H, S, F) with padded keys' rows zero."""
    return features if key_mask is None else features * key_mask[:, None, :, None]


def _divide(numerator: Tensor, normaliser: Tensor) -> Tensor:
    """numerator (..., Dh) / normaliser (..., 1); zeros where the normaliser is 0 (no key)."""
    return numerator / normaliser.masked_fill(normaliser == 0, 1.0)


def linear_context(fq: Tensor, fk: Tensor, v: Tensor, causal: bool, chunk: int = 64) -> Tensor:
    """fq (B, H, T, F), fk (B, H, S, F) (padding already zero), v (B, H, S, Dh) -> context
    (B, H, T, Dh); causal: query t sees the keys up to position t + S - T."""
    t, s = fq.size(-2), fk.size(-2)
    if not causal or t == 1:
        state = fk.transpose(-1, -2) @ v  # (B, H, F, Dh)
        return _divide(fq @ state, fq @ fk.sum(-2)[..., None])
    if t > s:  # the first T - S rows see no key: keys of zero features before the first
        fk = F.pad(fk, (0, 0, t - s, 0))
        v = F.pad(v, (0, 0, t - s, 0))
        s = t
    first = s - t  # the keys every query sees
    state = fk[..., :first, :].transpose(-1, -2) @ v[..., :first, :]  # (B, H, F, Dh)
    total = fk[..., :first, :].sum(-2)  # (B, H, F)
    outputs = []
    order = torch.ones(chunk, chunk, dtype=torch.bool, device=fq.device).tril()
    for start in range(0, t, chunk):
        stop = min(start + chunk, t)
        q_c = fq[..., start:stop, :]  # (B, H, C, F)
        k_c, v_c = fk[..., first + start : first + stop, :], v[..., first + start : first + stop, :]
        within = (q_c @ k_c.transpose(-1, -2)) * order[: stop - start, : stop - start]  # (C, C)
        numerator = q_c @ state + within @ v_c  # (B, H, C, Dh)
        normaliser = q_c @ total[..., None] + within.sum(-1, keepdim=True)  # (B, H, C, 1)
        outputs.append(_divide(numerator, normaliser))
        state = state + k_c.transpose(-1, -2) @ v_c
        total = total + k_c.sum(-2)
    return torch.cat(outputs, dim=-2)


class KernelAttention(AttentionImpl):
    """Attention as phi(q) phi(k)^T normalised; subclasses give :meth:`features`."""

    exact = False

    def features(self, x: Tensor, is_query: bool) -> Tensor:
        """(B, H, N, Dh) -> (B, H, N, F), positive."""
        raise NotImplementedError

    def forward(self, q, k, v, key_mask=None, causal=False, p=0.0):
        fq, fk = self.features(q, True), _masked(self.features(k, False), key_mask)
        return linear_context(fq, fk, v, causal)

    def implied_weights(self, q, k, key_mask=None, causal=False):
        fq, fk = self.features(q, True), _masked(self.features(k, False), key_mask)
        scores = fq @ fk.transpose(-1, -2)  # (B, H, T, S), >= 0
        if causal:
            t, s = q.size(-2), k.size(-2)
            scores = scores * torch.ones(t, s, dtype=torch.bool, device=q.device).tril(s - t)
        return _divide(scores, scores.sum(-1, keepdim=True))


class LinearAttention(KernelAttention):
    """Katharopoulos et al. 2020: phi(x) = elu(x) + 1."""

    name = "linear"

    def features(self, x, is_query):
        return F.elu(x) + 1.0


def orthogonal_features(features: int, dim: int, seed: int) -> Tensor:
    """(F, Dh) random directions: blocks of Dh orthonormal rows (QR of a Gaussian matrix), each
    row scaled to the norm of a Gaussian vector of Dh entries (FAVOR+'s orthogonal features)."""
    gen = torch.Generator().manual_seed(seed)
    blocks = []
    for _ in range(-(-features // dim)):
        ortho, _ = torch.linalg.qr(torch.randn(dim, dim, generator=gen))
        blocks.append(ortho.T)
    norms = torch.randn(features, dim, generator=gen).norm(dim=1, keepdim=True)  # chi(Dh)
    return torch.cat(blocks)[:features] * norms


class PerformerAttention(KernelAttention):
    """FAVOR+ with ``features`` positive orthogonal random features for heads of width
    ``head_dim``, drawn from ``seed``."""

    name = "performer"

    def __init__(self, head_dim: int, features: int = 64, seed: int = 0):
        super().__init__()
        if features < 1:
            raise ConfigError(f"model.random_features: must be at least 1, got {features}")
        self.num_features = features
        directions = orthogonal_features(features, head_dim, seed)  # (F, Dh)
        self.register_buffer("directions", directions, persistent=False)

    def features(self, x, is_query):
        x = x * x.size(-1) ** -0.25  # q . k / sqrt(Dh) = (q / Dh^1/4) . (k / Dh^1/4)
        projected = x @ self.directions.to(x.dtype).T  # (B, H, N, F)
        # exp(w . x - |x|^2 / 2), shifted by a maximum for range: per row for a query (it cancels
        # in the row's normalisation), one per head for the keys (it cancels for all rows)
        if is_query:
            shift = projected.amax(-1, keepdim=True)
        else:
            shift = projected.amax(dim=(-2, -1), keepdim=True)
        squared = (x * x).sum(-1, keepdim=True) / 2
        return torch.exp(projected - squared - shift.detach()) / math.sqrt(self.num_features)
