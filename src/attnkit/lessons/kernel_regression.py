"""Nadaraya-Watson kernel regression, the oldest attention (Nadaraya 1964, Watson 1964).

A prediction at query ``x`` is a weighted average of the training values ``y_i``, the weights
a softmax over how close ``x`` is to each training input (key) ``x_i``:

    f(x) = sum_i softmax_i(score(x, x_i)) y_i

With the Gaussian kernel the score is ``-(x - x_i)^2 / (2 w^2)``: the width ``w`` decides how
many neighbours share the weight. The boxcar kernel gives equal weight to every key within
``w`` and none beyond: a mask, turned into weights by attnkit's own
:func:`~attnkit.attention.scores.masked_softmax` (masked keys get exactly 0). Shapes: queries
``(Q,)``, keys and values ``(K,)``, weights ``(Q, K)``.
"""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch import Tensor

from attnkit.attention.scores import masked_softmax


def _gaussian(distance: Tensor, width: Tensor) -> tuple[Tensor, Tensor | None]:
    return -0.5 * (distance / width) ** 2, None


def _laplace(distance: Tensor, width: Tensor) -> tuple[Tensor, Tensor | None]:
    return -distance.abs() / width, None


def _boxcar(distance: Tensor, width: Tensor) -> tuple[Tensor, Tensor | None]:
    return torch.zeros_like(distance), distance.abs() <= width


KERNELS: dict[str, Callable[[Tensor, Tensor], tuple[Tensor, Tensor | None]]] = {
    "gaussian": _gaussian,
    "laplace": _laplace,
    "boxcar": _boxcar,
}
"""Kernel name -> ``(distance (Q, K), width) -> (scores (Q, K), mask or None)``."""


def kernel_weights(
    queries: Tensor, keys: Tensor, kernel: str = "gaussian", width=1.0, mask: Tensor | None = None
) -> Tensor:
    """Attention weights ``(Q, K)`` of each query over the keys; ``mask`` (bool ``(Q, K)`` or
    ``(K,)``, True = may attend) is combined with the kernel's own. A query with no key allowed
    gets all-zero weights."""
    if kernel not in KERNELS:
        raise ValueError(f"unknown kernel {kernel!r}; valid: {', '.join(KERNELS)}")
    width = torch.as_tensor(width, dtype=queries.dtype)
    if not bool((width > 0).all()):
        raise ValueError(f"width must be > 0, got {width.tolist()}")
    distance = queries.reshape(-1, 1) - keys.reshape(1, -1)  # (Q, K)
    scores, own = KERNELS[kernel](distance, width)
    if mask is not None:
        mask = mask.to(torch.bool).expand_as(scores)
        own = mask if own is None else own & mask
    return masked_softmax(scores, own)


def nadaraya_watson(
    queries: Tensor,
    keys: Tensor,
    values: Tensor,
    kernel: str = "gaussian",
    width=1.0,
    mask: Tensor | None = None,
) -> tuple[Tensor, Tensor]:
    """``(predictions (Q,), weights (Q, K))``: attention pooling of ``values`` (see
    :func:`kernel_weights`)."""
    weights = kernel_weights(queries, keys, kernel, width, mask)
    return weights @ values, weights


def fit_width(
    keys: Tensor, values: Tensor, kernel: str = "gaussian", steps: int = 200, lr: float = 0.05
) -> float:
    """The kernel width that predicts each training value best from the *other* training
    points (leave-one-out squared error, the key itself masked), learnt by gradient descent on
    ``log w`` with Adam from ``w = 1``. The boxcar kernel has no gradient: a ValueError."""
    if kernel == "boxcar":
        raise ValueError("the boxcar kernel's width has no gradient: choose it by hand")
    log_width = torch.zeros((), requires_grad=True)
    others = ~torch.eye(len(keys), dtype=torch.bool)  # (K, K): not itself
    optimizer = torch.optim.Adam([log_width], lr=lr)
    for _ in range(steps):
        optimizer.zero_grad()
        predictions, _ = nadaraya_watson(keys, keys, values, kernel, log_width.exp(), others)
        loss = ((predictions - values) ** 2).mean()
        loss.backward()
        optimizer.step()
    return float(log_width.detach().exp())


def truth(x: Tensor) -> Tensor:
    """The function of the toy data: ``2 sin(x) + x^0.8`` (as in d2l.ai's chapter)."""
    return 2 * torch.sin(x) + x**0.8


def toy_data(n: int = 50, seed: int = 0, noise: float = 0.5) -> tuple[Tensor, Tensor]:
    """``(x, y)``: ``n`` sorted inputs uniform on [0, 5] and noisy values of :func:`truth`."""
    generator = torch.Generator().manual_seed(seed)
    x = torch.sort(torch.rand(n, generator=generator) * 5).values
    return x, truth(x) + noise * torch.randn(n, generator=generator)


def mse(predictions: Tensor, targets: Tensor) -> float:
    """Mean squared error, a float."""
    return float(((predictions - targets) ** 2).mean())


def entropy(weights: Tensor) -> float:
    """Mean entropy (nats) of the rows of ``weights``: 0 when each query looks at one key,
    ``log K`` when it looks at all alike."""
    p = weights.clamp_min(1e-12)
    return float(-(weights * p.log()).sum(-1).mean())
