"""The cosine and noam learning-rate schedules of the seq2seq trainer."""

import math

import pytest

from attnkit.experiment import TrainConfig
from attnkit.training.trainer import cosine_lr, noam_lr


def _tc(**kw):
    base = {"batch_size": 8, "lr": 1e-3, "min_lr": 1e-5, "scheduler": "cosine"}
    return TrainConfig(**{**base, **kw})


def test_cosine_runs_from_lr_to_min_lr_over_the_planned_updates():
    tc = _tc()
    assert cosine_lr(tc, 0, 100, 0.0, None) == pytest.approx(1e-3)
    assert cosine_lr(tc, 50, 100, 0.0, None) == pytest.approx((1e-3 + 1e-5) / 2)
    assert cosine_lr(tc, 100, 100, 0.0, None) == pytest.approx(1e-5)
    assert cosine_lr(tc, 250, 100, 0.0, None) == pytest.approx(
        1e-5
    )  # past the plan: stays at the floor
    lrs = [cosine_lr(tc, s, 100, 0.0, None) for s in range(101)]
    assert all(a >= b for a, b in zip(lrs, lrs[1:]))


def test_a_time_budget_ends_the_schedule_when_it_comes_first():
    tc = _tc()
    # 10 of 1000 updates done, but 3/4 of the budget used: the schedule follows the clock
    expected = 1e-5 + (1e-3 - 1e-5) * 0.5 * (1 + math.cos(math.pi * 0.75))
    assert cosine_lr(tc, 10, 1000, 45.0, 60.0) == pytest.approx(expected)
    assert cosine_lr(tc, 900, 1000, 1.0, 60.0) == pytest.approx(cosine_lr(tc, 900, 1000, 0.0, None))


def test_warmup_scales_the_first_updates():
    tc = _tc(warmup_steps=10)
    assert cosine_lr(tc, 0, 1000, 0.0, None) == pytest.approx(
        cosine_lr(_tc(), 0, 1000, 0.0, None) / 10
    )
    assert cosine_lr(tc, 10, 1000, 0.0, None) == pytest.approx(
        cosine_lr(_tc(), 10, 1000, 0.0, None)
    )


def test_noam_rises_to_lr_over_the_warmup_then_decays_as_one_over_sqrt():
    tc = _tc(scheduler="noam", warmup_steps=100)
    assert noam_lr(tc, 0) == pytest.approx(1e-3 / 100)
    assert noam_lr(tc, 49) == pytest.approx(1e-3 / 2)
    assert noam_lr(tc, 99) == pytest.approx(1e-3)  # the peak: update 100
    assert noam_lr(tc, 399) == pytest.approx(1e-3 / 2)  # 4x the warm-up: half the peak
    lrs = [noam_lr(tc, s) for s in range(1000)]
    assert max(lrs) == pytest.approx(1e-3) and lrs.index(max(lrs)) == 99
