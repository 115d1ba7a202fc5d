"""Inverted dropout, plain torch unless a backend allows the faster masks of :mod:`attnkit.accel`.

The models and :class:`attnkit.attention.qkv.MultiHeadAttention` drop through these functions,
so that one scope (:mod:`attnkit.attention.overrides`) decides for all of them: ``F.dropout`` and
``bernoulli_`` masks by default; inside a scope allowing kernels, the overrides ``dropout`` and
``keep_mask`` (on a CPU, masks from integer random bits or a compiled kernel:
:mod:`attnkit.accel.dropout`).
"""

from __future__ import annotations

import torch.nn.functional as F
from torch import Tensor, nn

from attnkit.attention.overrides import lookup


def keep_mask(shape: tuple[int, ...], p: float, like: Tensor) -> Tensor:
    """A mask of ``shape``: 0 with probability p, else 1 / (1 - p), in ``like``'s dtype and
    device (0 <= p < 1)."""
    fast = lookup("keep_mask")
    if fast is not None:
        return fast(shape, p, like)
    return like.new_empty(shape).bernoulli_(1.0 - p).div_(1.0 - p)


def dropout(x: Tensor, p: float, training: bool) -> Tensor:
    """``F.dropout(x, p, training)``, or the registered override where it is allowed."""
    if not training or p == 0.0:
        return x
    fast = lookup("dropout")
    return F.dropout(x, p, training) if fast is None else fast(x, p, training)


class Dropout(nn.Dropout):
    """nn.Dropout through :func:`dropout` (same parameters, same state dict)."""

    def forward(self, x: Tensor) -> Tensor:
        return dropout(x, self.p, self.training)
