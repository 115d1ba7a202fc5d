"""Luong's position-aware attentions: luong-location, local-m and local-p (attention/local.py).

The generic properties (a masked distribution, one step equal to the rows of a T-step call,
padding changes nothing) are checked for every registered attention in test_attention_modules.py
and test_scores_properties.py; here: the window's support, where p_t sits, the Gaussian, the
location score's independence from the keys' content, and the errors.
"""

import pytest
import torch

from attnkit.attention import (
    AttentionOptions,
    build_attention,
    gaussian_log_weights,
    local_window,
    location_scores,
)
from attnkit.errors import ConfigError
from attnkit.models.seq2seq import Seq2Seq, Seq2SeqConfig

B, T, S, D = 2, 5, 9, 8


def _inputs(seed=0, lengths=(S, 6)):
    g = torch.Generator().manual_seed(seed)
    query = torch.randn(B, T, D, generator=g)
    keys = torch.randn(B, S, D, generator=g)
    mask = torch.arange(S)[None, :] < torch.tensor(lengths)[:, None]  # (B, S)
    return query, keys, mask


def _module(name, window=2, positions=16):
    torch.manual_seed(0)
    return build_attention(name, D, D, D, 1, AttentionOptions(window=window, positions=positions))


def test_local_window_and_gaussian_are_what_they_say():
    centres = torch.tensor([[0.0, 2.5, 7.0]])  # (B, T)
    window = local_window(centres, 8, 2)  # (1, 3, 8)
    assert window[0, 0].tolist() == [True, True, True] + [False] * 5
    assert window[0, 1].nonzero().flatten().tolist() == [1, 2, 3, 4]
    assert window[0, 2].nonzero().flatten().tolist() == [5, 6, 7]
    log_g = gaussian_log_weights(centres, 8, sigma=1.0)
    assert log_g[0, 2].argmax() == 7 and log_g[0, 2, 7] == 0.0
    torch.testing.assert_close(log_g[0, 0, 2], torch.tensor(-2.0))  # -(2 - 0)^2 / 2


@pytest.mark.parametrize("window", [1, 2])
def test_local_m_puts_weight_only_within_d_of_t_clamped_to_the_source(window):
    att = _module("local-m", window)
    query, keys, mask = _inputs()
    with torch.no_grad():
        _, weights = att(query, keys, mask=mask, position=3)  # rows t = 3..7
    lengths = mask.sum(-1)
    for b in range(B):
        for row in range(T):
            centre = min(3 + row, int(lengths[b]) - 1)
            support = weights[b, row].nonzero().flatten()
            assert support.min() >= centre - window and support.max() <= centre + window
            assert weights[b, row, centre] > 0
            torch.testing.assert_close(weights[b, row].sum(), torch.tensor(1.0))


def test_local_p_predicts_a_centre_inside_the_source_and_its_gaussian_shapes_the_weights():
    att = _module("local-p", window=3)
    with torch.no_grad():
        att.key_proj.weight.zero_()  # equal scores: the Gaussian alone shapes the weights
    query, keys, mask = _inputs(1)
    lengths = mask.sum(-1, keepdim=True).float()
    with torch.no_grad():
        centres = att.centres(query, lengths - 1, 0)  # (B, T)
        _, weights = att(query, keys, mask=mask)
    assert (centres >= 0).all() and (centres <= lengths - 1).all()
    expected = torch.softmax(gaussian_log_weights(centres, S, 1.5), -1) * local_window(
        centres, S, 3
    )
    expected = expected * mask[:, None, :]
    expected = expected / expected.sum(-1, keepdim=True)
    torch.testing.assert_close(weights, expected)
    assert (weights.argmax(-1).float() - centres).abs().max() <= 0.5


def test_local_p_centre_learns_from_a_gradient():
    att = _module("local-p", window=2)
    query, keys, mask = _inputs(2)
    _, weights = att(query, keys, mask=mask)
    (weights * torch.arange(S)).sum().backward()  # the mean position moves with p_t
    assert att.position_v.grad.abs().sum() > 0 and att.position_proj.weight.grad.abs().sum() > 0


def test_location_weights_ignore_what_the_keys_hold():
    att = _module("luong-location")
    query, keys, mask = _inputs(3)
    with torch.no_grad():
        c1, w1 = att(query, keys, mask=mask)
        c2, w2 = att(query, torch.randn_like(keys), mask=mask)
    torch.testing.assert_close(w1, w2)
    assert not torch.allclose(c1, c2)
    full = location_scores(query, att.location.weight, S, att.location.bias)
    torch.testing.assert_close(w1[0], torch.softmax(full[0], -1))


def test_location_refuses_a_source_longer_than_its_positions_in_one_line():
    att = _module("luong-location", positions=4)
    query, keys, mask = _inputs()
    with pytest.raises(ConfigError, match=r"model.positions=4 .* source of 9"):
        att(query, keys, mask=mask)


@pytest.mark.parametrize(
    ("key", "value", "match"),
    [
        ("window", 0, "window: must be"),
        ("positions", 0, "positions: must be"),
        ("beta", 0, "beta: must be"),
    ],
)
def test_bad_settings_are_config_errors(key, value, match):
    cfg = Seq2SeqConfig(
        attention={"window": "local-m", "positions": "luong-location"}.get(key, "cosine")
    )
    setattr(cfg, key, value)
    with pytest.raises(ConfigError, match=match):
        cfg.validate("model")


def test_local_m_decoders_attend_around_each_target_step():
    """Teacher forcing (whole target) and step-by-step decoding give local-m the same p_t = t."""
    torch.manual_seed(0)
    cfg = Seq2SeqConfig(
        attention="local-m",
        window=1,
        embedding_dim=8,
        encoder_hidden=8,
        decoder_hidden=16,
        attention_dim=8,
        input_feeding=False,
    )
    model = Seq2Seq(cfg, 12, 10).eval()
    src = torch.randint(4, 12, (2, 7))
    tgt = torch.randint(4, 10, (2, 5))
    with torch.no_grad():
        _, weights = model(src, torch.tensor([7, 7]), tgt)  # (B, T, S)
        memory, state = model.encode(src, torch.tensor([7, 7]))
        steps = []
        for t in range(5):
            _, state, w = model.decoder.step(tgt[:, t], state, memory)
            steps.append(w)
    torch.testing.assert_close(torch.stack(steps, 1), weights)
    for t in range(5):
        support = weights[:, t].nonzero()[:, 1]
        assert support.min() >= t - 1 and support.max() <= t + 1
