"""The CTC recogniser: frames and shapes, the loss against torch's own, best-path decoding,
and a little learning."""

from __future__ import annotations

import math

import pytest
import torch

from attnkit.errors import ConfigError
from attnkit.models.ctc import CTC, collapse
from attnkit.models.las import LASConfig, Listener

SMALL = LASConfig(kind="ctc", listener_hidden=16, pyramid_layers=1, stack=2, dropout=0.0)


def test_the_listener_stacks_then_halves_the_frames():
    torch.manual_seed(0)
    model = CTC(SMALL, n_mels=8, vocab_size=12, blank=0)
    assert model.listener.stride == 4
    log_probs, lengths = model(torch.randn(2, 41, 8), torch.tensor([41, 17]))
    assert log_probs.shape == (2, 10, 12)  # 41 -> 20 stacked -> 10
    assert lengths.tolist() == [10, 4]
    assert torch.allclose(log_probs.exp().sum(-1), torch.ones(2, 10), atol=1e-5)
    short, short_lengths = model(torch.randn(1, 1, 8), torch.tensor([1]))  # less than a stack
    assert short.shape == (1, 1, 12) and short_lengths.tolist() == [1]


def test_stacking_concatenates_consecutive_frames():
    cfg = LASConfig(listener_hidden=4, pyramid_layers=0, stack=3)
    listener = Listener(2, cfg)
    assert listener.first.input_size == 6 and listener.stride == 3


def test_collapse_merges_repeats_then_drops_blanks():
    assert collapse([0, 3, 3, 0, 3, 4, 4, 0], blank=0) == [3, 3, 4]
    assert collapse([0, 0, 0], blank=0) == []
    assert collapse([5, 5, 5], blank=0) == [5]


def test_the_loss_is_torchs_ctc_per_target_label_and_ignores_padding():
    torch.manual_seed(0)
    model = CTC(SMALL, n_mels=8, vocab_size=12, blank=0).eval()
    log_probs, lengths = model(torch.randn(2, 40, 8), torch.tensor([40, 24]))
    targets = torch.tensor([[3, 4, 5], [7, -1, -1]])
    loss = model.loss(log_probs, lengths, targets)
    expected = torch.nn.functional.ctc_loss(
        log_probs.transpose(0, 1),
        torch.tensor([3, 4, 5, 7]),
        lengths,
        torch.tensor([3, 1]),
        blank=0,
        reduction="sum",
    )
    assert math.isclose(float(loss.detach()), float(expected.detach()) / 4, rel_tol=1e-5)
    impossible = model.loss(log_probs[:1, :2], torch.tensor([2]), torch.tensor([[3, 3, 3]]))
    assert float(impossible.detach()) == 0.0  # 3 3 3 needs 5 frames: zero, not inf


def test_greedy_decoding_reads_the_best_path():
    model = CTC(SMALL, n_mels=8, vocab_size=5, blank=0)
    path = torch.tensor([[0, 2, 2, 0, 2, 3]])  # -> 2 2 3
    fake = torch.nn.functional.one_hot(path, 5).float().log_softmax(-1) * 10

    class Fixed(CTC):
        def forward(self, features, lengths):
            return fake.log_softmax(-1), torch.tensor([6])

    model.__class__ = Fixed
    labels, posteriors = model.greedy(torch.zeros(1, 24, 8), torch.tensor([24]))
    assert labels == [[2, 2, 3]] and posteriors.shape == (1, 6, 5)


def test_it_learns_which_sound_comes_first():
    """30 steps: the loss falls below a fifth (about a tenth on seeds 0-5) and the heard order
    costs clearly less than the swapped one (1.8-2.6 times less on seeds 0-5)."""
    torch.manual_seed(0)
    cfg = LASConfig(kind="ctc", listener_hidden=16, pyramid_layers=1, dropout=0.0)
    model = CTC(cfg, n_mels=8, vocab_size=5, blank=0)
    low, high = torch.zeros(1, 16, 8), torch.zeros(1, 16, 8)
    low[..., :4], high[..., 4:] = 1.0, 1.0
    features = torch.cat([torch.cat([low, high], 1), torch.cat([high, low], 1)])  # (2, 32, 8)
    features = features + 0.1 * torch.randn_like(features)
    targets = torch.tensor([[3, 4], [4, 3]])
    lengths = torch.tensor([32, 32])
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
    losses = []
    for _ in range(30):
        log_probs, frames = model(features, lengths)
        loss = model.loss(log_probs, frames, targets)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(float(loss.detach()))
    assert losses[-1] < 0.2 * losses[0]
    with torch.no_grad():
        log_probs, frames = model.eval()(features, lengths)
        right = float(model.loss(log_probs, frames, targets))
        swapped = float(model.loss(log_probs, frames, targets.flip(0)))
    assert swapped > 1.4 * right


@pytest.mark.parametrize(
    "key, value, message",
    [
        ("kind", "rnnt", "model: kind: 'rnnt' is not one of las, ctc"),
        ("stack", 0, "model.stack: must be 1 to 8, got 0"),
        ("stack", 9, "model.stack: must be 1 to 8, got 9"),
    ],
)
def test_bad_model_keys_are_one_line(key, value, message):
    from attnkit.config import from_dict

    with pytest.raises(ConfigError, match=message):
        from_dict(LASConfig, {key: value}, "model")
