"""The statistics of the faithfulness tests: rank correlations with their significance, and the
distances between distributions.

* :func:`kendall_tau`: Kendall's tau-b (ties in either ranking corrected for) and its two-sided
  p-value from the normal approximation with the tie-corrected variance (Kendall 1945; what
  ``scipy.stats.kendalltau(method="asymptotic")`` computes);
* :func:`spearman`: Spearman's rho (Pearson's correlation of the mid-ranks) and its two-sided
  p-value from Student's t with n - 2 degrees of freedom (what ``scipy.stats.spearmanr``
  computes);
* :func:`jsd`: the Jensen-Shannon divergence in nats (at most ln 2), :func:`tvd`: the total
  variation distance (half the L1 distance, at most 1).

scipy is not a dependency of attnkit; the incomplete beta function behind Student's t is the
continued fraction of Numerical Recipes (Press et al. 2007, section 6.4).

Shapes: S positions, N rows of distributions, C classes.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import torch
from torch import Tensor

#: p below this counts as a significant correlation (Jain & Wallace 2019)
ALPHA = 0.05


@dataclass(frozen=True)
class Correlation:
    """A rank correlation and its two-sided p-value; NaN both where it is undefined (fewer than
    three positions, or a constant ranking)."""

    value: float
    p: float

    @property
    def significant(self) -> bool:
        return bool(self.p < ALPHA)


UNDEFINED = Correlation(math.nan, math.nan)


def ranks(x: np.ndarray) -> np.ndarray:
    """Ranks of ``x`` (S,) from 1, tied values sharing their mean rank."""
    x = np.asarray(x, dtype=float)
    order = x.argsort(kind="stable")
    r = np.empty(len(x))
    r[order] = np.arange(1, len(x) + 1)
    _, group = np.unique(x, return_inverse=True)
    return (np.bincount(group, weights=r) / np.bincount(group))[group]


def _tie_sums(x: np.ndarray) -> tuple[float, float, float]:
    """For the tied groups of ``x`` (sizes t): sum t(t-1), sum t(t-1)(t-2), sum t(t-1)(2t+5)."""
    _, counts = np.unique(x, return_counts=True)
    t = counts[counts > 1].astype(float)
    return (
        float((t * (t - 1)).sum()),
        float((t * (t - 1) * (t - 2)).sum()),
        float((t * (t - 1) * (2 * t + 5)).sum()),
    )


def kendall_tau(a, b) -> Correlation:
    """Kendall's tau-b of two scorings (S,) of the same positions, and its p-value."""
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    n = len(a)
    if n < 3 or np.ptp(a) == 0 or np.ptp(b) == 0:
        return UNDEFINED
    i, j = np.triu_indices(n, 1)
    da, db = np.sign(a[i] - a[j]), np.sign(b[i] - b[j])
    s = float((da * db).sum())  # concordant - discordant pairs
    pairs = n * (n - 1) / 2
    ta, ta2, ta3 = _tie_sums(a)
    tb, tb2, tb3 = _tie_sums(b)
    tau = s / math.sqrt((pairs - ta / 2) * (pairs - tb / 2))
    var = (
        (n * (n - 1) * (2 * n + 5) - ta3 - tb3) / 18
        + ta2 * tb2 / (9 * n * (n - 1) * (n - 2))
        + ta * tb / (2 * n * (n - 1))
    )
    p = math.erfc(abs(s) / math.sqrt(2 * var)) if var > 0 else math.nan
    return Correlation(float(np.clip(tau, -1.0, 1.0)), min(1.0, p))


def spearman(a, b) -> Correlation:
    """Spearman's rho of two scorings (S,) of the same positions, and its p-value."""
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    n = len(a)
    if n < 3 or np.ptp(a) == 0 or np.ptp(b) == 0:
        return UNDEFINED
    rho = float(np.clip(np.corrcoef(ranks(a), ranks(b))[0, 1], -1.0, 1.0))
    if abs(rho) >= 1.0:
        return Correlation(rho, 0.0)
    dof = n - 2
    t = rho * math.sqrt(dof / (1 - rho * rho))
    return Correlation(rho, student_t_two_sided(t, dof))


def student_t_two_sided(t: float, dof: int) -> float:
    """P(|T| >= |t|) for Student's t with ``dof`` degrees of freedom: I_x(dof/2, 1/2) with
    x = dof / (dof + t^2)."""
    return incomplete_beta(dof / 2, 0.5, dof / (dof + t * t))


def incomplete_beta(a: float, b: float, x: float) -> float:
    """The regularised incomplete beta function I_x(a, b), 0 <= x <= 1."""
    if x <= 0.0:
        return 0.0
    if x >= 1.0:
        return 1.0
    front = math.exp(
        math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log1p(-x)
    )
    if x < (a + 1) / (a + b + 2):
        return front * _beta_fraction(a, b, x) / a
    return 1.0 - front * _beta_fraction(b, a, 1.0 - x) / b


def _beta_fraction(a: float, b: float, x: float, steps: int = 300, eps: float = 1e-15) -> float:
    """The continued fraction of I_x(a, b) by the modified Lentz method."""
    tiny = 1e-300
    c, d = 1.0, 1.0 - (a + b) * x / (a + 1)
    d = 1.0 / (d if abs(d) > tiny else tiny)
    h = d
    for m in range(1, steps + 1):
        for num in (
            m * (b - m) * x / ((a + 2 * m - 1) * (a + 2 * m)),
            -(a + m) * (a + b + m) * x / ((a + 2 * m) * (a + 2 * m + 1)),
        ):
            d = 1.0 + num * d
            d = 1.0 / (d if abs(d) > tiny else tiny)
            c = 1.0 + num / c
            c = c if abs(c) > tiny else tiny
            h *= d * c
        if abs(d * c - 1.0) < eps:
            break
    return h


def tvd(p: Tensor, q: Tensor) -> Tensor:
    """(..., C), (..., C) distributions -> (...) total variation distance, in [0, 1]."""
    return 0.5 * (p - q).abs().sum(-1)


def jsd(p: Tensor, q: Tensor) -> Tensor:
    """(..., C), (..., C) distributions -> (...) Jensen-Shannon divergence in nats, in
    [0, ln 2]; zero entries contribute nothing."""
    m = 0.5 * (p + q)

    def kl(x: Tensor) -> Tensor:
        return torch.where(x > 0, x * (x.clamp_min(1e-30).log() - m.clamp_min(1e-30).log()), 0.0)

    return (0.5 * kl(p) + 0.5 * kl(q)).sum(-1).clamp_min(0.0)
