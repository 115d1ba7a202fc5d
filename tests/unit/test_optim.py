"""The trainer's optimizer: Adam over the given parameters, fused where torch allows it."""

import pytest
import torch

from attnkit.training.optim import adam


def test_adam_over_the_parameters_with_the_learning_rate():
    model = torch.nn.Linear(3, 2)
    opt = adam(model.parameters(), 0.01)
    assert isinstance(opt, torch.optim.Adam)
    (group,) = opt.param_groups
    assert group["lr"] == 0.01 and group["params"] == list(model.parameters())


def test_one_step_is_the_plain_adam_update():
    """Fused or not, the update is Adam's: compared with torch's per-tensor loop."""
    torch.manual_seed(0)
    a, b = torch.nn.Linear(4, 3), torch.nn.Linear(4, 3)
    b.load_state_dict(a.state_dict())
    before = a.weight.detach().clone()
    x = torch.randn(5, 4)
    for model, opt in ((a, adam(a.parameters(), 0.1)), (b, torch.optim.Adam(b.parameters(), 0.1))):
        model(x).square().sum().backward()
        opt.step()
    for p, q in zip(a.parameters(), b.parameters()):
        torch.testing.assert_close(p, q)
    assert not torch.equal(a.weight, before)  # the step did something


@pytest.mark.parametrize("error", [RuntimeError, TypeError, ValueError])
def test_a_torch_without_the_fused_kernel_gets_the_plain_one(monkeypatch, error):
    real = torch.optim.Adam
    calls = []

    def no_fused(params, lr, **kwargs):
        calls.append(kwargs)
        if kwargs.get("fused"):
            raise error("fused=True is not supported here")
        return real(params, lr=lr, **kwargs)

    monkeypatch.setattr(torch.optim, "Adam", no_fused)
    opt = adam(torch.nn.Linear(2, 2).parameters(), 0.5)
    assert isinstance(opt, real) and opt.param_groups[0]["lr"] == 0.5
    assert calls == [{"fused": True}, {}]
