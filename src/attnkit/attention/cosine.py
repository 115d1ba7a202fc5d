"""The Neural Turing Machine's content-based addressing (Graves et al. 2014) as a seq2seq score:
``cosine``.

The decoder state h_t emits a key k_t = W_k h_t and a key strength beta_t = softplus(w_b h_t + b)
>= 0; the weights are ``softmax(beta_t * cos(k_t, h_s))``. beta sharpens: near 0 they spread
evenly over the source, large they approach the argmax. ``model.beta`` is beta_t's value at
initialisation (the bias b is set to give it; the model learns to change it).

Shapes: B batch, T queries, S keys, Dq query width, Dk key width.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from attnkit.attention.base import Attention
from attnkit.attention.scores import cosine_scores
from attnkit.errors import ConfigError


def inverse_softplus(y: float) -> float:
    """x with softplus(x) = y (y > 0)."""
    return y + math.log(-math.expm1(-y))


class CosineAttention(Attention):
    """``cosine``: ``softmax(beta_t * cos(W_k h_t, h_s))`` with beta_t >= 0 emitted by h_t."""

    def __init__(self, query_dim: int, key_dim: int, beta: float):
        super().__init__()
        if not beta > 0:
            raise ConfigError(f"model.beta: must be above 0, got {beta}")
        self.key = nn.Linear(query_dim, key_dim)  # W_k: the key the state emits
        self.strength = nn.Linear(query_dim, 1)  # w_b, b: the key strength before softplus
        with torch.no_grad():
            self.strength.weight.mul_(0.1)
            self.strength.bias.fill_(inverse_softplus(beta))

    def beta(self, query: Tensor) -> Tensor:
        """(B, T, Dq) -> the key strengths beta_t (B, T), >= 0."""
        return F.softplus(self.strength(query)).squeeze(-1)

    def scores(self, query: Tensor, projected: Tensor) -> Tensor:
        return cosine_scores(self.key(query), projected, self.beta(query))  # (B, T, S)
