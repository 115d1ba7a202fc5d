"""Log-mel features: the mel matrix against hand-computed band centres, frames and normalising."""

from __future__ import annotations

import math

import pytest
import torch

from attnkit.data.features import MelConfig, frames_of, hz_to_mel, log_mel, mel_matrix


def test_the_htk_mel_scale_at_known_points():
    assert hz_to_mel(0.0) == 0.0
    assert hz_to_mel(1000.0) == pytest.approx(1000.0, abs=0.1)  # the scale's anchor
    assert hz_to_mel(700.0) == pytest.approx(2595 * math.log10(2))


def test_each_filter_is_a_triangle_between_its_neighbours():
    cfg = MelConfig(sample_rate=16_000, n_fft=512, n_mels=40, f_min=0.0)
    weights = mel_matrix(cfg)
    assert weights.shape == (257, 40)
    assert weights.min() >= 0 and weights.max() <= 1
    peaks = weights.argmax(dim=0)
    assert torch.all(peaks[1:] >= peaks[:-1])  # centres rise with the band
    assert weights[:, 0].sum() > 0 and weights[:, -1].sum() > 0  # no band left empty


def test_a_sine_lands_in_the_band_centred_nearest_its_frequency():
    # By hand: mel(8000 Hz) = 2840.0, so with 40 bands from 0 Hz the centres sit at
    # (m + 1) * 2840.0 / 41 mel; 1000 Hz is 1000 mel, (m + 1) = 14.44, nearest m = 13.
    cfg = MelConfig(sample_rate=16_000, n_fft=512, hop=160, n_mels=40, f_min=0.0)
    t = torch.arange(16_000) / 16_000
    features = log_mel(torch.sin(2 * math.pi * 1000 * t), cfg, normalise=False)
    assert features.shape == (1 + 16_000 // 160, 40)
    assert features.mean(dim=0).argmax().item() == 13


def test_features_are_normalised_per_band():
    cfg = MelConfig()
    noise = torch.randn(22_050, generator=torch.Generator().manual_seed(0))
    features = log_mel(noise, cfg)
    assert features.mean(dim=0).abs().max() < 1e-4
    assert (features.std(dim=0, unbiased=False) - 1).abs().max() < 1e-3


def test_a_signal_shorter_than_a_window_still_gives_a_frame():
    assert log_mel(torch.ones(10) * 0.1, MelConfig(), normalise=False).shape[1] == 40
    with pytest.raises(ValueError, match="non-empty 1-D"):
        log_mel(torch.zeros(0), MelConfig())
    with pytest.raises(ValueError, match="does not fit"):
        mel_matrix(MelConfig(sample_rate=16_000, f_max=9000.0))


def test_frames_of_a_span_are_those_centred_in_it():
    assert list(frames_of(15, 40, hop=10)) == [2, 3]  # centres 20 and 30
    assert list(frames_of(20, 21, hop=10)) == [2]
    assert list(frames_of(21, 29, hop=10)) == []
