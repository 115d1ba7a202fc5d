"""CPU dropout masks from integer random bits: right values, right rate, unbiased, off outside
training."""

import pytest
import torch

from attnkit.accel.dropout import dropout, keep_mask
from attnkit.attention.dropout import Dropout


@pytest.mark.parametrize("p", [0.1, 0.2, 0.5])
def test_keep_mask_has_the_rate_and_keeps_the_expectation(p):
    torch.manual_seed(0)
    mask = keep_mask((1000, 1000), p, torch.empty(0))
    values = mask.unique()
    assert values.numel() == 2 and values[0] == 0
    assert values[1] == pytest.approx(1 / (1 - p), rel=1e-6)
    kept = (mask > 0).float().mean().item()
    assert kept == pytest.approx(1 - p, abs=5e-3)  # 1e6 draws: the standard deviation is under 5e-4
    assert mask.mean().item() == pytest.approx(1.0, abs=1e-2)


def test_masks_follow_the_seed_and_the_input_dtype():
    torch.manual_seed(3)
    a = keep_mask((64, 32), 0.3, torch.empty(0, dtype=torch.float64))
    torch.manual_seed(3)
    b = keep_mask((64, 32), 0.3, torch.empty(0, dtype=torch.float64))
    assert a.dtype == torch.float64 and torch.equal(a, b)


def test_dropout_is_the_identity_when_off():
    x = torch.randn(8, 5)
    assert dropout(x, 0.4, training=False) is x
    assert dropout(x, 0.0, training=True) is x
    layer = Dropout(0.4).eval()
    assert torch.equal(layer(x), x)
    layer.train()
    y = layer(x)
    assert torch.all((y == 0) | torch.isclose(y, x / 0.6))
