"""What the memory network's training takes from the paper's reference code: each weight's
gradient clipped apart by its spectral norm, and the rate held through linear start."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest
import torch

from attnkit.families.memnet.adapter import MemnetAdapter, clip_each_weight
from attnkit.families.memnet.config import parse_config
from attnkit.training.loop import LoopSettings
from attnkit.training.state import TrainerState


def _param(grad: torch.Tensor) -> torch.nn.Parameter:
    p = torch.nn.Parameter(torch.zeros_like(grad))
    p.grad = grad.clone()
    return p


def test_each_matrix_is_clipped_by_its_largest_singular_value():
    rng = np.random.default_rng(0)
    big, small = rng.normal(size=(7, 5)) * 30, rng.normal(size=(4, 3)) * 0.01
    vector = np.full(9, 10.0)  # length 30
    params = [_param(torch.tensor(x, dtype=torch.float32)) for x in (big, small, vector)]
    clip_each_weight(params, 6.0)
    assert np.linalg.svd(params[0].grad.numpy(), compute_uv=False)[0] == pytest.approx(6.0)
    assert np.allclose(params[0].grad.numpy() / big, params[0].grad[0, 0].item() / big[0, 0])
    assert np.allclose(params[1].grad.numpy(), small)  # under the limit: as it was
    assert np.linalg.norm(params[2].grad.numpy()) == pytest.approx(6.0)
    # its Frobenius norm stays above the limit: the clip is not the global one
    assert np.linalg.norm(params[0].grad.numpy()) > 6.0


def test_a_gradient_that_is_not_finite_is_left_to_the_guard():
    p = _param(torch.tensor([[float("nan"), 1.0], [2.0, 3.0]]))
    clip_each_weight([p], 1.0)
    assert torch.isnan(p.grad[0, 0]) and p.grad[1, 1] == 3.0


def _rates(**train) -> list[float]:
    cfg = parse_config({"family": "memnet", "train": {"lr": 0.005, "lr_step_epochs": 25, **train}})
    adapter = SimpleNamespace(t_cfg=cfg.train)
    rates = []
    for epoch in range(120):
        rates.append(MemnetAdapter.rate(adapter, TrainerState(epoch=epoch), 0, 28, 0.0))
    return rates


def test_the_rate_is_held_through_linear_start_then_halved_from_its_end():
    rates = _rates(linear_start=20, restart_after_linear_start=True, epochs=120)
    assert set(rates[:45]) == {0.005}  # 20 linear epochs, then 25 at the first rate
    assert set(rates[45:70]) == {0.0025} and rates[95] == 0.005 / 8
    plain = _rates(linear_start=20, epochs=120)
    assert plain[24] == 0.005 and plain[25] == 0.0025  # one decay from epoch 0


def test_clip_each_takes_the_clip_away_from_the_loop():
    cfg = parse_config({"family": "memnet", "train": {"clip": 40, "clip_each": True}})
    assert LoopSettings.of(cfg.train).clip is None
    cfg = parse_config({"family": "memnet", "train": {"clip": 40}})
    assert LoopSettings.of(cfg.train).clip == 40
