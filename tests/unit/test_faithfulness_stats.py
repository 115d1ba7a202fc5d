"""Rank correlations, their p-values and the distances, against values known from elsewhere
(textbook cases; scipy 1.17's kendalltau(method="asymptotic"), spearmanr, t.sf and betainc)."""

import math

import numpy as np
import pytest
import torch

from attnkit.evaluation.faithfulness_stats import (
    incomplete_beta,
    jsd,
    kendall_tau,
    ranks,
    spearman,
    student_t_two_sided,
    tvd,
)


def test_ranks_share_ties():
    assert ranks(np.array([10, 20, 20, 5])).tolist() == [2.0, 3.5, 3.5, 1.0]


def test_kendall_and_spearman_without_ties():
    a, b = [1, 2, 3, 4, 5], [3, 1, 2, 5, 4]
    # 7 concordant and 3 discordant pairs of 10: tau = 0.4; sum d^2 = 8: rho = 1 - 6*8/120
    tau, rho = kendall_tau(a, b), spearman(a, b)
    assert tau.value == pytest.approx(0.4) and rho.value == pytest.approx(0.6)
    assert tau.p == pytest.approx(0.32718687779030575, rel=1e-9)
    assert rho.p == pytest.approx(0.28475697986529386, rel=1e-9)
    assert not tau.significant


def test_kendall_and_spearman_with_ties():
    a, b = [1, 1, 2, 3, 4, 5], [2, 1, 1, 4, 3, 6]
    tau, rho = kendall_tau(a, b), spearman(a, b)
    assert tau.value == pytest.approx(0.6428571428571429, rel=1e-9)
    assert tau.p == pytest.approx(0.07983871964585261, rel=1e-9)
    assert rho.value == pytest.approx(0.8088235294117647, rel=1e-9)
    assert rho.p == pytest.approx(0.051329063199674334, rel=1e-9)


def test_perfect_reversed_and_undefined():
    x = list(range(12))
    assert kendall_tau(x, x).value == pytest.approx(1.0)
    assert kendall_tau(x, x[::-1]).value == pytest.approx(-1.0)
    assert kendall_tau(x, x).significant and spearman(x, x).significant
    assert math.isnan(kendall_tau([1, 2], [2, 1]).value)  # too few positions
    assert math.isnan(spearman([1, 1, 1], [1, 2, 3]).p)  # a constant ranking


def test_student_t_and_incomplete_beta():
    assert student_t_two_sided(2.0, 10) == pytest.approx(0.07338803477074037, rel=1e-9)
    assert student_t_two_sided(2.228138851986274, 10) == pytest.approx(0.05, rel=1e-9)
    assert incomplete_beta(2.5, 1.5, 0.3) == pytest.approx(0.08894372317066562, rel=1e-9)
    assert incomplete_beta(0.5, 0.5, 0.2) == pytest.approx(0.2951672353008665, rel=1e-9)
    assert incomplete_beta(3.0, 3.0, 0.5) == pytest.approx(0.5)  # symmetric


def test_distances():
    p, q = torch.tensor([1.0, 0.0]), torch.tensor([0.0, 1.0])
    assert float(tvd(p, q)) == pytest.approx(1.0)
    assert float(jsd(p, q)) == pytest.approx(math.log(2))  # the largest
    assert float(jsd(p, p)) == pytest.approx(0.0)
    # JSD([.5, .5], [1, 0]) = 0.5 KL([.5,.5] || [.75,.25]) + 0.5 KL([1,0] || [.75,.25])
    half = torch.tensor([0.5, 0.5])
    by_hand = 0.5 * (0.5 * math.log(0.5 / 0.75) + 0.5 * math.log(0.5 / 0.25)) + 0.5 * math.log(
        1 / 0.75
    )
    assert float(jsd(half, p)) == pytest.approx(by_hand)
