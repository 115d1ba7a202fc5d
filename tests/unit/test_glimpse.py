"""Hard attention: the glimpse sensor against a slow loop, and where REINFORCE's gradients go."""

from __future__ import annotations

import math

import pytest
import torch

from attnkit.attention.hard import (
    GlimpseSensor,
    LocationPolicy,
    baseline_loss,
    gaussian_log_prob,
    glimpse_boxes,
    location_to_pixel,
    patch_sizes,
    reinforce_loss,
)
from attnkit.models.ram import RecurrentAttentionModel, hybrid_loss, predict


def slow_glimpse(
    image: torch.Tensor, x: float, y: float, base: int, scales: int, factor: int
) -> torch.Tensor:
    """Reference: one image (C, H, W), per-pixel loops, zeros outside -> (k, C, base, base)."""
    c, h, w = image.shape
    cx = min(max(math.floor((x + 1) * w / 2), 0), w - 1)
    cy = min(max(math.floor((y + 1) * h / 2), 0), h - 1)
    out = torch.zeros(scales, c, base, base, dtype=torch.float64)
    for k in range(scales):
        p = base * factor**k
        pool = p // base
        for ch in range(c):
            for i in range(p):
                for j in range(p):
                    r, col = cy - p // 2 + i, cx - p // 2 + j
                    value = float(image[ch, r, col]) if 0 <= r < h and 0 <= col < w else 0.0
                    out[k, ch, i // pool, j // pool] += value / (pool * pool)
    return out


LOCATIONS = [
    (0.0, 0.0),  # centre
    (-1.0, -1.0),  # top-left corner: three quarters of every patch are padding
    (1.0, 1.0),  # bottom-right corner
    (1.0, -1.0),  # top-right corner
    (-1.0, 0.3),  # left border
    (0.37, 0.999),  # bottom border
    (-0.61, 0.22),
    (1.7, -3.0),  # outside [-1, 1]: clamped to the corner
]


@pytest.mark.parametrize("base,scales,factor", [(8, 1, 2), (4, 3, 2), (3, 2, 3)])
def test_glimpse_equals_slow_reference(base, scales, factor):
    torch.manual_seed(0)
    images = torch.rand(len(LOCATIONS), 2, 20, 27)  # non-square, two channels
    locations = torch.tensor(LOCATIONS)
    fast = GlimpseSensor(base, scales, factor)(images, locations)
    assert fast.shape == (len(LOCATIONS), scales, 2, base, base)
    for b, (x, y) in enumerate(LOCATIONS):
        ref = slow_glimpse(images[b], x, y, base, scales, factor)
        torch.testing.assert_close(fast[b].double(), ref, atol=1e-6, rtol=1e-6)


def test_glimpse_at_corner_is_mostly_zero_padding():
    images = torch.ones(1, 1, 28, 28)
    patches = GlimpseSensor(8, 1)(images, torch.tensor([[-1.0, -1.0]]))
    assert patches.sum().item() == pytest.approx(16.0)  # only the 4x4 quarter inside the image


def test_pad_once_extract_many_equals_forward():
    torch.manual_seed(1)
    sensor = GlimpseSensor(6, 3, 2)
    images = torch.rand(5, 1, 40, 40)
    padded, pad = sensor.pad(images)
    for _ in range(3):
        loc = torch.rand(5, 2) * 2 - 1
        torch.testing.assert_close(sensor.extract(padded, pad, 40, 40, loc), sensor(images, loc))


def test_boxes_match_the_extracted_pixels():
    loc = torch.tensor([[-1.0, -1.0], [0.5, -0.25]])
    boxes = glimpse_boxes(loc, 60, 60, patch_sizes(12, 3, 2))  # (2, 3, 3)
    centre = location_to_pixel(loc, 60, 60)
    assert boxes.shape == (2, 3, 3)
    assert boxes[0, 0].tolist() == [0 - 6, 0 - 6, 12]
    assert boxes[1, 2].tolist() == [int(centre[1, 0]) - 24, int(centre[1, 1]) - 24, 48]


def test_sensor_passes_gradient_to_images_not_locations():
    images = torch.rand(2, 1, 16, 16, requires_grad=True)
    loc = torch.zeros(2, 2, requires_grad=True)
    GlimpseSensor(4, 2)(images, loc).sum().backward()
    assert images.grad is not None and images.grad.abs().sum() > 0
    assert loc.grad is None


def test_location_policy_samples_detached_actions_with_gaussian_log_prob():
    torch.manual_seed(0)
    policy = LocationPolicy(16, std=0.2)
    state = torch.randn(64, 16)
    loc, log_prob, mean = policy(state)
    assert loc.shape == (64, 2) and log_prob.shape == (64,)
    assert not loc.requires_grad and log_prob.requires_grad
    assert loc.min() >= -1 and loc.max() <= 1
    # inside [-1, 1] the clamp is a no-op and the density is the Normal's
    inside = (loc.abs() < 1).all(dim=1)
    expected = torch.distributions.Normal(mean, 0.2).log_prob(loc).sum(-1)
    torch.testing.assert_close(log_prob[inside], expected[inside])
    mean_loc, _, _ = policy(state, sample=False)
    torch.testing.assert_close(mean_loc, mean.detach())
    assert gaussian_log_prob(torch.zeros(1, 2), torch.zeros(1, 2), 1.0).item() == pytest.approx(
        -math.log(2 * math.pi)
    )


def test_reinforce_loss_scale_and_detached_baseline():
    log_probs = torch.tensor([[0.5, -1.0], [2.0, 0.0]], requires_grad=True)
    rewards = torch.tensor([1.0, 0.0])
    baselines = torch.tensor([[0.25, 0.5], [0.5, 0.75]], requires_grad=True)
    loss = reinforce_loss(log_probs, rewards, baselines)
    # mean over the batch of the sum over glimpses of -log pi * (R - b)
    manual = -((0.5 * 0.75 + -1.0 * 0.5) + (2.0 * -0.5 + 0.0 * -0.75)) / 2
    assert loss.item() == pytest.approx(manual)
    loss.backward()
    assert baselines.grad is None  # the baseline is detached inside REINFORCE
    torch.testing.assert_close(log_probs.grad, -(rewards[:, None] - baselines.detach()) / 2)
    b = baselines.detach().requires_grad_()
    baseline_loss(b, rewards).backward()
    assert b.grad.abs().sum() > 0


def _grads(module: torch.nn.Module) -> float:
    return sum(float(p.grad.abs().sum()) for p in module.parameters() if p.grad is not None)


def _ram(detach_policy_state: bool = True) -> RecurrentAttentionModel:
    return RecurrentAttentionModel(
        glimpses=3,
        patch=4,
        scales=2,
        glimpse_hidden=16,
        location_hidden=8,
        hidden=32,
        std=0.2,
        detach_policy_state=detach_policy_state,
    )


@pytest.mark.parametrize("detach_policy_state", [True, False])
def test_policy_learns_only_from_reinforce_and_baseline_only_from_its_mse(detach_policy_state):
    torch.manual_seed(0)
    model = _ram(detach_policy_state)
    images, labels = torch.rand(16, 1, 16, 16), torch.randint(0, 10, (16,))
    out = model(images)
    assert not out.locations.requires_grad  # actions enter the sensor detached
    losses = hybrid_loss(out, labels)
    if losses.reward.sum() == 0:  # make some advantages nonzero either way
        losses.reward[:4] = 1.0
    terms = {
        "classification": losses.classification,
        "reinforce": reinforce_loss(out.location_log_probs, losses.reward, out.baselines),
        "baseline": baseline_loss(out.baselines, losses.reward),
    }
    got = {}
    for name, term in terms.items():
        model.zero_grad(set_to_none=True)
        term.backward(retain_graph=True)
        got[name] = {
            "policy": _grads(model.policy),
            "baseline": _grads(model.baseline),
            "core": _grads(model.core),
            "classifier": _grads(model.classifier),
        }
    assert (
        got["classification"]["policy"] == 0.0
    )  # no path from the class through the sampled locations
    assert got["classification"]["baseline"] == 0.0
    assert got["classification"]["core"] > 0 and got["classification"]["classifier"] > 0
    assert got["reinforce"]["policy"] > 0
    assert got["reinforce"]["baseline"] == 0.0  # baseline detached in the reward term
    assert got["reinforce"]["classifier"] == 0.0
    assert (got["reinforce"]["core"] > 0) == (not detach_policy_state)
    assert got["baseline"]["baseline"] > 0
    assert got["baseline"]["policy"] == 0.0 and got["baseline"]["core"] == 0.0


def test_baseline_is_trained_towards_the_reward():
    torch.manual_seed(0)
    model = _ram()
    # one class only: the classifier soon gets every image right, the reward goes to 1
    images, labels = torch.rand(32, 1, 16, 16), torch.full((32,), 3)
    optimizer = torch.optim.Adam(model.parameters(), lr=3e-2)
    start = [p.detach().clone() for p in model.baseline.parameters()]
    for _ in range(60):
        losses = hybrid_loss(model(images), labels)
        optimizer.zero_grad()
        losses.total.backward()
        optimizer.step()
    out = model(images)
    assert hybrid_loss(out, labels).reward.mean() == 1.0
    assert out.baselines.mean().item() > 0.8  # it learned to expect the reward
    assert any(not torch.equal(a, b) for a, b in zip(start, model.baseline.parameters()))


def test_monte_carlo_prediction_is_a_distribution():
    torch.manual_seed(0)
    model = _ram().eval()
    probs = predict(model, torch.rand(5, 1, 16, 16), samples=4)
    assert probs.shape == (5, 10)
    torch.testing.assert_close(probs.sum(-1), torch.ones(5))
