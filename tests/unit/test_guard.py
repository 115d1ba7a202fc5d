"""The update guard: a NaN/inf loss or gradient norm skips the step; too many in a row stop."""

import math

import pytest
import torch

from attnkit.errors import TrainingError
from attnkit.training.guard import UpdateGuard, check_weights


def _setup(fused=True):
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(3, 5), torch.nn.Tanh(), torch.nn.Linear(5, 2))
    return model, torch.optim.Adam(model.parameters(), lr=0.1, fused=fused)


def _backward(model, poison=None):
    """Loss and gradients of one batch; ``poison`` (nan or inf) enters one gradient."""
    loss = model(torch.ones(4, 3)).pow(2).mean()
    loss.backward()
    if poison is not None:
        model[0].weight.grad[0, 0] = poison
    return loss.detach()


def _snapshot(model, opt):
    weights = [p.detach().clone() for p in model.parameters()]
    state = {id(p): {k: v.clone() for k, v in s.items()} for p, s in opt.state.items()}
    return weights, state


def _same(before, after):
    (w1, s1), (w2, s2) = before, after
    assert all(torch.equal(a, b) for a, b in zip(w1, w2))
    assert s1.keys() == s2.keys()
    for key in s1:
        assert all(torch.equal(s1[key][k], s2[key][k]) for k in s1[key])


@pytest.mark.parametrize("fused", [True, False])
@pytest.mark.parametrize("clip", [0.0, None, 1.0])
@pytest.mark.parametrize("poison", [math.nan, math.inf])
def test_a_non_finite_gradient_skips_the_step(fused, clip, poison):
    model, opt = _setup(fused)
    guard = UpdateGuard(5)
    assert guard.step(opt, model.parameters(), _backward(model), clip, update=1) is None  # applied
    before = _snapshot(model, opt)
    opt.zero_grad()
    reason = guard.step(opt, model.parameters(), _backward(model, poison), clip, update=2)
    assert reason is not None and "gradient norm" in reason
    _same(before, _snapshot(model, opt))  # weights and Adam's moments untouched
    assert all(p.grad is None for p in model.parameters())
    assert (guard.in_a_row, guard.skipped) == (1, 1)
    assert all(torch.isfinite(p).all() for p in model.parameters())


@pytest.mark.parametrize("loss", [math.nan, math.inf, torch.tensor(math.nan)])
def test_a_non_finite_loss_skips_the_step(loss):
    model, opt = _setup()
    _backward(model)  # finite gradients: the loss alone says no
    before = _snapshot(model, opt)
    reason = UpdateGuard(5).step(opt, model.parameters(), loss, 1.0, update=1)
    assert reason is not None and "loss" in reason
    _same(before, _snapshot(model, opt))


def test_too_many_in_a_row_end_the_run_naming_the_update():
    model, opt = _setup()
    guard = UpdateGuard(3)
    for update in (1, 2):
        opt.zero_grad()
        assert guard.step(opt, model.parameters(), _backward(model, math.nan), 1.0, update)
    opt.zero_grad()
    assert (
        guard.step(opt, model.parameters(), _backward(model), 1.0, 3) is None
    )  # a good one resets
    assert guard.in_a_row == 0 and guard.skipped == 2
    for update in (4, 5):
        opt.zero_grad()
        guard.step(opt, model.parameters(), _backward(model, math.nan), 1.0, update)
    opt.zero_grad()
    with pytest.raises(
        TrainingError, match=r"^update 6: 3 updates in a row .*train.max_bad_updates: 3"
    ):
        guard.step(opt, model.parameters(), _backward(model, math.inf), 1.0, 6)


def test_clipping_still_applies_to_finite_updates():
    model, _ = _setup()
    _backward(model)
    norm = torch.nn.utils.get_total_norm([p.grad for p in model.parameters()])
    clip = float(norm) / 4
    UpdateGuard(1).step(
        torch.optim.SGD(model.parameters(), lr=0.0), model.parameters(), 1.0, clip, 1
    )
    clipped = torch.nn.utils.get_total_norm([p.grad for p in model.parameters()])
    assert float(clipped) == pytest.approx(clip, rel=1e-4)


def test_check_weights_names_the_parameter():
    model, _ = _setup()
    check_weights(model, "update 3")
    with torch.no_grad():
        model[2].bias[1] = math.inf
    with pytest.raises(TrainingError, match=r"^update 3: 2.bias holds NaN or infinite values"):
        check_weights(model, "update 3")


def test_a_step_size_past_float32_is_a_training_error():
    model, opt = _setup(fused=False)
    opt.param_groups[0]["lr"] = 1e38  # / (1 - 0.9) overflows float32 in the per-tensor Adam
    with pytest.raises(
        TrainingError, match=r"^update 7: the optimizer's step overflowed .*train.lr"
    ):
        UpdateGuard(5).step(opt, model.parameters(), _backward(model), 1.0, update=7)


def test_check_weights_covers_buffers():
    model = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.BatchNorm1d(4))
    model[1].running_var[2] = math.nan  # as a forward through diverged weights leaves it
    with pytest.raises(TrainingError, match=r"1.running_var holds NaN"):
        check_weights(model, "epoch 1")
