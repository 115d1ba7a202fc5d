"""WAV files in and out (soundfile), bounded: what a speech model may be given to hear.

:func:`read_wav` checks what the header says before decoding a sample: the file's size on disk,
that it is a WAV, its sample rate, channels and duration; then it decodes, refuses NaN or
infinite samples and audio that is empty or silent, and mixes several channels to one. Every
refusal is one :class:`~attnkit.errors.DataError` line naming the file. :func:`write_wav` writes
16-bit PCM atomically.
"""

from __future__ import annotations

import io
import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from attnkit.errors import AttnkitError, DataError

MAX_BYTES = 64 * 1024 * 1024  # a minute of 48 kHz stereo float is 23 MB
SAMPLE_RATES = (8_000, 48_000)  # the rates a speech model's features are made from
MAX_CHANNELS = 2
MAX_SECONDS = 60.0
SILENCE = 1e-4  # peak amplitude (of 1.0 full scale) below which audio is silent


@dataclass
class Audio:
    """Mono audio: ``samples`` float32 ``(N,)`` in [-1, 1] at ``sample_rate`` Hz."""

    samples: np.ndarray
    sample_rate: int

    @property
    def seconds(self) -> float:
        return len(self.samples) / self.sample_rate


def _soundfile():
    try:
        import soundfile
    except ImportError:
        raise AttnkitError("reading audio needs soundfile: pip install attnkit[speech]") from None
    return soundfile


def read_wav(path: str | Path, max_seconds: float = MAX_SECONDS) -> Audio:
    """The WAV file at ``path`` as mono audio; a DataError naming the file for anything else."""
    path = Path(path)
    if not path.is_file():
        raise DataError("no such audio file (give a WAV)", path=path)
    size = path.stat().st_size
    if size > MAX_BYTES:
        raise DataError(f"{size:,} bytes: an audio file may hold at most {MAX_BYTES:,}", path=path)
    with open(path, "rb") as handle:
        return _decode(handle, path, max_seconds)


def wav_from_bytes(data: bytes, name: str = "upload", max_seconds: float = MAX_SECONDS) -> Audio:
    """WAV bytes (an upload) as mono audio, with the checks of :func:`read_wav`."""
    if len(data) > MAX_BYTES:
        raise DataError(f"{len(data):,} bytes: audio may hold at most {MAX_BYTES:,}", path=name)
    return _decode(io.BytesIO(data), name, max_seconds)


def _decode(handle, name, max_seconds: float) -> Audio:
    """Check the header of an open binary file, then decode and check the samples."""
    soundfile = _soundfile()
    try:
        info = soundfile.info(handle)
    except (RuntimeError, soundfile.LibsndfileError, ValueError):
        raise DataError("not a WAV file soundfile can read", path=name) from None
    if info.format not in ("WAV", "WAVEX"):
        raise DataError(f"a {info.format} file: give a WAV", path=name)
    rate, channels = info.samplerate, info.channels
    if not SAMPLE_RATES[0] <= rate <= SAMPLE_RATES[1]:
        raise DataError(
            f"{rate:,} Hz: the sample rate must be {SAMPLE_RATES[0]:,} to {SAMPLE_RATES[1]:,}",
            path=name,
        )
    if not 1 <= channels <= MAX_CHANNELS:
        raise DataError(f"{channels} channels: give mono or stereo audio", path=name)
    if info.frames / rate > max_seconds:
        raise DataError(
            f"{info.frames / rate:,.1f} s long: audio may last at most {max_seconds:g} s", path=name
        )
    handle.seek(0)
    try:
        samples, _ = soundfile.read(handle, dtype="float32", always_2d=True, frames=info.frames)
    except (RuntimeError, soundfile.LibsndfileError) as exc:
        raise DataError(f"cannot decode the audio ({exc})", path=name) from None
    return Audio(_checked_mono(samples, name), rate)


def _checked_mono(samples: np.ndarray, name) -> np.ndarray:
    """``(N, C)`` samples -> ``(N,)`` mono, refusing empty, non-finite and silent audio."""
    if samples.shape[0] == 0:
        raise DataError("the audio is empty (no samples)", path=name)
    if not np.isfinite(samples).all():
        bad = int((~np.isfinite(samples)).any(axis=1).argmax())
        raise DataError(f"sample {bad} is NaN or infinite", path=name)
    mono = samples.mean(axis=1, dtype=np.float32)  # (N,)
    if float(np.abs(mono).max()) < SILENCE:
        raise DataError("the audio is silent", path=name)
    return np.clip(mono, -1.0, 1.0)


def wav_bytes(audio: Audio) -> bytes:
    """``audio`` as the bytes of a 16-bit PCM WAV file (to embed in a page)."""
    buffer = io.BytesIO()
    samples = np.clip(np.asarray(audio.samples, dtype=np.float32), -1.0, 1.0)
    _soundfile().write(buffer, samples, audio.sample_rate, subtype="PCM_16", format="WAV")
    return buffer.getvalue()


def write_wav(path: str | Path, audio: Audio) -> Path:
    """``audio`` as a 16-bit PCM WAV at ``path``, written whole or not at all."""
    soundfile = _soundfile()
    path = Path(path)
    partial = path.with_name(path.name + ".partial")
    samples = np.clip(np.asarray(audio.samples, dtype=np.float32), -1.0, 1.0)
    soundfile.write(partial, samples, audio.sample_rate, subtype="PCM_16", format="WAV")
    os.replace(partial, path)
    return path
