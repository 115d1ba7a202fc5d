"""Luong et al. (2015)'s position-aware attentions: ``luong-location``, ``local-m``, ``local-p``.

* location: ``a_t = softmax(W_a h_t)`` over source positions, from the target state alone (the
  keys only give the context); W_a scores at most P = ``model.positions`` positions.
* local-m (monotonic): the window [p_t - D, p_t + D] around p_t = t (clamped to the last source
  position), the ``general`` score h_t^T W_a h_s inside it, zero weight outside.
* local-p (predictive): p_t = (S - 1) * sigmoid(v_p^T tanh(W_p h_t)) for a source of S positions
  (0-based; the paper's p_t = S * sigmoid(...) counts from 1), the window around it, and the
  ``general`` weights times a Gaussian exp(-(s - p_t)^2 / (2 sigma^2)) with sigma = D / 2. Here
  the Gaussian enters as a log term before the softmax, so the weights stay a distribution (the
  paper multiplies after the softmax, and its weights need not sum to 1).

Every one of them is :attr:`~attnkit.attention.base.Attention.position_aware`: it does not permute
with its source, and local-m reads the target step t that the decoders pass as ``position``.

Shapes: B batch, T queries, S keys, Dq query width, Dk key width, A attention width, P positions.
"""

from __future__ import annotations

import torch
from torch import Tensor, nn

from attnkit.attention.base import Attention
from attnkit.attention.scores import (
    dot_scores,
    gaussian_log_weights,
    local_window,
    location_scores,
)
from attnkit.errors import ConfigError


class LocationAttention(Attention):
    """``luong-location``: weights from h_t alone, ``softmax(W_a h_t)`` masked to the source."""

    position_aware = True

    def __init__(self, query_dim: int, positions: int):
        super().__init__()
        if positions < 1:
            raise ConfigError(f"model.positions: must be at least 1, got {positions}")
        self.positions = positions
        self.location = nn.Linear(query_dim, positions)  # W_a (P, Dq) and a bias per position

    def scores(self, query: Tensor, projected: Tensor) -> Tensor:
        sources = projected.size(-2)
        if sources > self.positions:
            raise ConfigError(
                f"luong-location scores at most model.positions={self.positions} source "
                f"positions, got a source of {sources}: raise model.positions or lower "
                "data.max_src_len"
            )
        # (B, T, S)
        return location_scores(query, self.location.weight, sources, self.location.bias)


class LocalAttention(Attention):
    """``local-m`` (``predictive=False``) and ``local-p``: the general score inside a window of
    half width D (``window``) around p_t; see the module docstring."""

    position_aware = True

    def __init__(self, predictive: bool, query_dim: int, key_dim: int, attn_dim: int, window: int):
        super().__init__()
        if window < 1:
            raise ConfigError(f"model.window: must be at least 1, got {window}")
        self.predictive = predictive
        self.window = window
        self.key_proj = nn.Linear(key_dim, query_dim, bias=False)  # W_a of the general score
        if predictive:
            self.position_proj = nn.Linear(query_dim, attn_dim, bias=False)  # W_p
            self.position_v = nn.Parameter(torch.empty(attn_dim).uniform_(-0.1, 0.1))  # v_p

    def project_keys(self, keys: Tensor) -> Tensor:
        return self.key_proj(keys)  # (B, S, Dq)

    def scores(self, query: Tensor, projected: Tensor) -> Tensor:
        return dot_scores(query, projected)  # (B, T, S)

    def centres(self, query: Tensor, last: Tensor, position: int) -> Tensor:
        """p_t (B, T) for queries (B, T, Dq); ``last`` (B, 1): each row's last source position."""
        if self.predictive:
            unit = torch.sigmoid(torch.tanh(self.position_proj(query)) @ self.position_v)
            return last * unit  # (B, T), in [0, S - 1]
        b, t = query.shape[:2]
        steps = torch.arange(position, position + t, device=query.device, dtype=last.dtype)
        return torch.minimum(steps.expand(b, t), last)  # (B, T): p_t = t, within the source

    def locate(self, query, scores, allowed, position):
        b, t, s = scores.shape
        if allowed is None:
            lengths = scores.new_full((b, 1), float(s))
        else:
            lengths = allowed.sum(-1, dtype=scores.dtype)  # (B, 1)
        centres = self.centres(query, (lengths - 1).clamp_min(0), position)  # (B, T)
        if self.predictive:
            scores = scores + gaussian_log_weights(centres, s, self.window / 2)
        window = local_window(centres, s, self.window)  # (B, T, S)
        return scores, window if allowed is None else allowed & window
