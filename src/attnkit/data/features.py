"""Log-mel filterbank features in plain torch: what a speech model hears.

A power spectrogram (``torch.stft``, Hann window, centred frames) is weighted by triangular
filters evenly spaced on the HTK mel scale (``mel = 2595 log10(1 + f / 700)``), the log taken,
and each band normalised over the utterance (zero mean, unit variance). Frame ``t`` is centred
on sample ``t * hop``, so a span of samples maps to frames with :func:`frames_of`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch


@dataclass(frozen=True)
class MelConfig:
    """How audio becomes features: window and hop in samples, mel bands and their range."""

    sample_rate: int = 22_050
    n_fft: int = 512  # 23 ms at 22.05 kHz
    hop: int = 220  # 10 ms
    n_mels: int = 40
    f_min: float = 20.0
    f_max: float | None = None  # None: half the sample rate


def hz_to_mel(hz):
    """HTK mel scale."""
    return 2595.0 * math.log10(1.0 + hz / 700.0)


def mel_to_hz(mel):
    return 700.0 * (10.0 ** (mel / 2595.0) - 1.0)


def mel_matrix(cfg: MelConfig) -> torch.Tensor:
    """Triangular filters ``(n_fft // 2 + 1, n_mels)``: column m rises from 0 at edge m to 1 at
    edge m+1 and falls to 0 at edge m+2, the ``n_mels + 2`` edges evenly spaced in mel."""
    f_max = cfg.f_max if cfg.f_max is not None else cfg.sample_rate / 2
    if not 0 <= cfg.f_min < f_max <= cfg.sample_rate / 2:
        raise ValueError(f"mel range {cfg.f_min}..{f_max} Hz does not fit {cfg.sample_rate} Hz")
    low, high = hz_to_mel(cfg.f_min), hz_to_mel(f_max)
    edges = torch.tensor(
        [mel_to_hz(low + (high - low) * k / (cfg.n_mels + 1)) for k in range(cfg.n_mels + 2)],
        dtype=torch.float64,
    )  # (n_mels + 2,) Hz
    bins = torch.linspace(0, cfg.sample_rate / 2, cfg.n_fft // 2 + 1, dtype=torch.float64)
    left, centre, right = edges[:-2], edges[1:-1], edges[2:]  # (n_mels,) each
    rising = (bins[:, None] - left) / (centre - left)  # (F, n_mels)
    falling = (right - bins[:, None]) / (right - centre)
    return torch.clamp(torch.minimum(rising, falling), min=0.0).float()


def log_mel(samples: torch.Tensor, cfg: MelConfig, normalise: bool = True) -> torch.Tensor:
    """``samples`` float ``(N,)`` -> features ``(1 + N // hop, n_mels)``; normalised per band
    over the utterance when ``normalise``."""
    if samples.dim() != 1 or samples.numel() == 0:
        raise ValueError(f"expected a non-empty 1-D signal, got shape {tuple(samples.shape)}")
    samples = samples.float()
    if samples.numel() <= cfg.n_fft // 2:  # reflect padding needs more samples than half a window
        samples = torch.nn.functional.pad(samples, (0, cfg.n_fft // 2 + 1 - samples.numel()))
    spectrum = torch.stft(
        samples,
        n_fft=cfg.n_fft,
        hop_length=cfg.hop,
        window=torch.hann_window(cfg.n_fft),
        center=True,
        return_complex=True,
    )  # (F, T)
    power = spectrum.abs().pow(2).T  # (T, F)
    features = torch.log(power @ mel_matrix(cfg) + 1e-6)  # (T, n_mels)
    return normalise_utterance(features) if normalise else features


def normalise_utterance(features: torch.Tensor) -> torch.Tensor:
    """Each band of ``features (T, n_mels)`` to zero mean and unit variance over time."""
    mean = features.mean(dim=0, keepdim=True)
    std = features.std(dim=0, unbiased=False, keepdim=True)
    return (features - mean) / (std + 1e-5)


def frames_of(start: int, end: int, hop: int) -> range:
    """The frames whose centre (``t * hop``) lies in samples ``[start, end)``."""
    return range(-(-start // hop), -(-end // hop))
