"""Inverted dropout whose CPU masks come from integer random bits.

``bernoulli_`` draws one double per element on a CPU, and was a visible share of a training step there;
comparing 31 uniform random bits with a threshold gives the same Bernoulli(1 - p) keep mask in about a
third of the time. The keep probability is then a multiple of 2^-31, and the kept values are scaled by its
exact inverse, so the expectation is unchanged. CUDA keeps the fused dropout kernel.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor, nn

_BITS = 2 ** 31  # int32 random_() is uniform on [0, 2^31)


def keep_mask(shape: tuple[int, ...], p: float, like: Tensor) -> Tensor:
    """A mask of ``shape``: 0 with probability p, else 1 / (keep probability), in ``like``'s dtype and device."""
    if like.device.type != "cpu":
        return like.new_empty(shape).bernoulli_(1.0 - p).div_(1.0 - p)
    threshold = round(p * _BITS)
    bits = torch.empty(shape, dtype=torch.int32).random_()
    return (bits >= threshold).to(like.dtype).mul_(_BITS / (_BITS - threshold))


def dropout(x: Tensor, p: float, training: bool) -> Tensor:
    """F.dropout with :func:`keep_mask` on a CPU."""
    if not training or p == 0.0:
        return x
    if x.device.type != "cpu" or p >= 1.0:
        return F.dropout(x, p, training)
    return x * keep_mask(x.shape, p, x)


class Dropout(nn.Dropout):
    """nn.Dropout drawing its CPU masks with :func:`keep_mask`."""

    def forward(self, x: Tensor) -> Tensor:
        return dropout(x, self.p, self.training)
