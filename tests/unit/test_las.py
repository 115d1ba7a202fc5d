"""Listen, Attend and Spell: the pyramid's frames, teacher forcing, greedy spelling, learning."""

from __future__ import annotations

import pytest
import torch

from attnkit.errors import ConfigError
from attnkit.models.las import LAS, LASConfig

SMALL = LASConfig(
    listener_hidden=16, pyramid_layers=2, speller_hidden=32, attention_dim=16, dropout=0.0
)


def test_the_pyramid_quarters_the_frames_and_the_mask_follows_the_lengths():
    torch.manual_seed(0)
    model = LAS(SMALL, n_mels=8, vocab_size=13, bos=1, eos=2)
    features = torch.randn(2, 41, 8)
    frames, mask = model.listen(features, torch.tensor([41, 17]))
    assert frames.shape == (2, 10, 32)  # 41 -> 20 -> 10
    assert mask.tolist() == [[True] * 10, [True] * 4 + [False] * 6]


@pytest.mark.parametrize("attention", ["location", "content"])
def test_teacher_forcing_gives_a_distribution_per_step(attention):
    torch.manual_seed(0)
    cfg = LASConfig(**{**SMALL.__dict__, "attention": attention})
    model = LAS(cfg, n_mels=8, vocab_size=13, bos=1, eos=2)
    targets = torch.tensor([[5, 6, 2], [7, 2, -1]])
    log_probs, weights = model(torch.randn(2, 40, 8), torch.tensor([40, 24]), targets)
    assert log_probs.shape == (2, 3, 13) and weights.shape == (2, 3, 10)
    assert torch.allclose(log_probs.exp().sum(-1), torch.ones(2, 3), atol=1e-5)
    assert weights[1, :, 6:].abs().max() == 0  # 24 frames -> 6 listener frames
    outputs, greedy_weights = model.eval().greedy(torch.randn(2, 40, 8), torch.tensor([40, 24]), 4)
    assert outputs.shape[0] == 2 and outputs.shape[1] <= 4
    assert greedy_weights.shape[:2] == outputs.shape


def test_it_learns_to_tell_two_sounds_apart():
    torch.manual_seed(0)
    model = LAS(SMALL, n_mels=8, vocab_size=13, bos=1, eos=2)
    low, high = torch.zeros(1, 32, 8), torch.zeros(1, 32, 8)
    low[..., :4], high[..., 4:] = 1.0, 1.0
    features = torch.cat([low, high]) + 0.1 * torch.randn(2, 32, 8)
    targets = torch.tensor([[3, 4, 2], [4, 3, 2]])
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
    losses = []
    for _ in range(60):
        log_probs, _ = model(features, torch.tensor([32, 32]), targets)
        loss = -log_probs.gather(-1, targets[..., None]).mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(float(loss.detach()))
    assert losses[-1] < 0.1 * losses[0]
    outputs, _ = model.eval().greedy(features, torch.tensor([32, 32]), 5)
    assert outputs[:, :3].tolist() == targets.tolist()


def test_bad_settings_name_the_key():
    with pytest.raises(ConfigError, match=r"model\.location_kernel: must be odd"):
        LASConfig(location_kernel=4).validate("model")
    with pytest.raises(ConfigError, match=r"model\.pyramid_layers"):
        LASConfig(pyramid_layers=9).validate("model")
