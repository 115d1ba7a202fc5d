"""The learning-rate schedules both trainers use (attnkit.training.schedules)."""

import math

import pytest
import torch

from attnkit.families.seq2seq.config import TrainConfig
from attnkit.families.vision.config import TrainConfig as VisionTrainConfig
from attnkit.training import schedules
from attnkit.training.schedules import learning_rate, run_progress


def _tc(**kw):
    base = {"batch_size": 8, "lr": 1e-3, "min_lr": 1e-5, "scheduler": "cosine"}
    return TrainConfig(**{**base, **kw})


def _cosine(tc, step, planned, elapsed=0.0, budget=None):
    """The seq2seq trainer's cosine rate of update ``step``."""
    return learning_rate(tc, step, run_progress(step, planned, elapsed, budget))


def test_cosine_runs_from_lr_to_min_lr_over_the_planned_updates():
    tc = _tc()
    assert _cosine(tc, 0, 100) == pytest.approx(1e-3)
    assert _cosine(tc, 50, 100) == pytest.approx((1e-3 + 1e-5) / 2)
    assert _cosine(tc, 100, 100) == pytest.approx(1e-5)
    assert _cosine(tc, 250, 100) == pytest.approx(1e-5)  # past the plan: stays at the floor
    lrs = [_cosine(tc, s, 100) for s in range(101)]
    assert all(a >= b for a, b in zip(lrs, lrs[1:]))


def test_a_time_budget_ends_the_schedule_when_it_comes_first():
    tc = _tc()
    # 10 of 1000 updates done, but 3/4 of the budget used: the schedule follows the clock
    expected = 1e-5 + (1e-3 - 1e-5) * 0.5 * (1 + math.cos(math.pi * 0.75))
    assert _cosine(tc, 10, 1000, 45.0, 60.0) == pytest.approx(expected)
    assert _cosine(tc, 900, 1000, 1.0, 60.0) == pytest.approx(_cosine(tc, 900, 1000))


def test_warmup_scales_the_first_updates():
    tc = _tc(warmup_steps=10)
    assert _cosine(tc, 0, 1000) == pytest.approx(_cosine(_tc(), 0, 1000) / 10)
    assert _cosine(tc, 10, 1000) == pytest.approx(_cosine(_tc(), 10, 1000))


def test_warm_up_alone_rises_to_lr_then_holds_it():
    """The warm-up of a family with no ``scheduler`` (speech): the same rise as the schedules'."""
    assert [schedules.warm_up(2e-3, step, 4) for step in range(6)] == pytest.approx(
        [5e-4, 1e-3, 1.5e-3, 2e-3, 2e-3, 2e-3]
    )
    assert schedules.warm_up(2e-3, 0, 0) == 2e-3  # 0: no warm-up


def test_noam_rises_to_lr_over_the_warmup_then_decays_as_one_over_sqrt():
    tc = _tc(scheduler="noam", warmup_steps=100)
    assert learning_rate(tc, 0, 0.0) == pytest.approx(1e-3 / 100)
    assert learning_rate(tc, 49, 0.0) == pytest.approx(1e-3 / 2)
    assert learning_rate(tc, 99, 0.0) == pytest.approx(1e-3)  # the peak: update 100
    assert learning_rate(tc, 399, 0.0) == pytest.approx(1e-3 / 2)  # 4x the warm-up: half the peak
    lrs = [learning_rate(tc, s, 0.0) for s in range(1000)]
    assert max(lrs) == pytest.approx(1e-3) and lrs.index(max(lrs)) == 99


def test_the_vision_cosine_is_the_same_curve_over_epochs():
    """Both trainers' configs give the same rate at the same progress."""
    vision = VisionTrainConfig(lr=1e-3, min_lr=1e-5, scheduler="cosine")
    for progress in (0.0, 0.3, 0.5, 1.0, 1.7):
        assert learning_rate(vision, 1000, progress) == learning_rate(_tc(), 1000, progress)
    assert learning_rate(vision, 0, 0.5) == pytest.approx((1e-3 + 1e-5) / 2)


def test_step_decays_by_gamma_every_few_epochs():
    tc = VisionTrainConfig(lr=1e-2, scheduler="step", lr_step_epochs=3, lr_gamma=0.5)
    rates = [learning_rate(tc, 0, 0.0, epochs) for epochs in (0.0, 2.9, 3.0, 5.5, 6.0, 9.2)]
    assert rates == pytest.approx([1e-2, 1e-2, 5e-3, 5e-3, 2.5e-3, 1.25e-3])


def test_constant_stays_at_lr_after_its_warmup():
    tc = VisionTrainConfig(lr=2e-3, scheduler="constant", warmup_steps=4)
    rates = [learning_rate(tc, step, step / 100) for step in range(8)]
    assert rates == pytest.approx([5e-4, 1e-3, 1.5e-3, 2e-3, 2e-3, 2e-3, 2e-3, 2e-3])


def test_plateau_is_stepped_by_evaluations_not_set_per_update():
    tc = _tc(scheduler="plateau", lr_factor=0.5, lr_patience=0, min_lr=3e-4)
    with pytest.raises(ValueError, match="plateau"):
        learning_rate(tc, 0, 0.0)
    optimizer = torch.optim.Adam([torch.nn.Parameter(torch.zeros(1))], lr=tc.lr)
    plateau = schedules.plateau(optimizer, tc, higher_is_better=True)
    for score in (0.5, 0.4, 0.3, 0.2):  # never better than the first
        plateau.step(score)
    assert optimizer.param_groups[0]["lr"] == pytest.approx(3e-4)  # 1e-3 -> 5e-4 -> floor
