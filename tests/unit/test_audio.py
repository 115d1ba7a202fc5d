"""The bounded WAV reader and writer: a round trip, and one line for each kind of bad audio."""

from __future__ import annotations

import numpy as np
import pytest

soundfile = pytest.importorskip("soundfile")

from attnkit.data import audio  # noqa: E402
from attnkit.errors import DataError  # noqa: E402


def _tone(seconds: float = 0.5, rate: int = 16_000) -> np.ndarray:
    t = np.arange(int(seconds * rate)) / rate
    return (0.5 * np.sin(2 * np.pi * 440 * t)).astype(np.float32)


def test_a_written_wav_reads_back_as_it_was(tmp_path):
    tone = _tone()
    path = audio.write_wav(tmp_path / "tone.wav", audio.Audio(tone, 16_000))
    back = audio.read_wav(path)
    assert back.sample_rate == 16_000 and back.samples.dtype == np.float32
    assert np.abs(back.samples - tone).max() < 1e-4  # 16-bit quantisation
    assert back.seconds == pytest.approx(0.5)
    assert not list(tmp_path.glob("*.partial"))


def test_wav_bytes_are_the_file_write_wav_writes(tmp_path):
    tone = audio.Audio(_tone(), 16_000)
    data = audio.wav_bytes(tone)
    assert data == audio.write_wav(tmp_path / "tone.wav", tone).read_bytes()
    back = audio.wav_from_bytes(data)
    assert back.sample_rate == 16_000 and np.abs(back.samples - tone.samples).max() < 1e-4


def test_stereo_is_mixed_to_mono(tmp_path):
    left, right = _tone(), np.zeros(8000, np.float32)
    soundfile.write(tmp_path / "s.wav", np.stack([left, right], axis=1), 16_000)
    assert np.abs(audio.read_wav(tmp_path / "s.wav").samples - left / 2).max() < 1e-4


def _nan_at(index: int) -> np.ndarray:
    return np.where(np.arange(800) == index, np.nan, 0.1).astype(np.float32)


def _write(path, samples, rate=16_000, **kw):
    soundfile.write(path, samples, rate, **kw)
    return path


@pytest.mark.parametrize(
    "make, message",
    [
        (lambda p: p / "missing.wav", "no such audio file"),
        (lambda p: (p / "t.wav").write_text("hello") and p / "t.wav", "not a WAV file"),
        (lambda p: _write(p / "a.flac", _tone()), "a FLAC file: give a WAV"),
        (lambda p: _write(p / "fast.wav", _tone(0.01), rate=1_000_000), "1,000,000 Hz"),
        (lambda p: _write(p / "many.wav", np.full((10, 64), 0.1, np.float32)), "64 channels"),
        (lambda p: _write(p / "empty.wav", np.zeros(0, np.float32)), "empty"),
        (lambda p: _write(p / "quiet.wav", np.zeros(800, np.float32)), "silent"),
        (lambda p: _write(p / "nan.wav", _nan_at(7), subtype="FLOAT"), "sample 7 is NaN"),
    ],
)
def test_bad_audio_is_one_line_naming_the_file(tmp_path, make, message):
    path = make(tmp_path)
    with pytest.raises(DataError, match=message) as caught:
        audio.read_wav(path)
    text = str(caught.value)
    assert "\n" not in text and text.startswith(str(path))


def test_too_long_and_too_big_are_refused_before_decoding(tmp_path, monkeypatch):
    path = _write(tmp_path / "long.wav", _tone(2.0))

    def no_decoding(*args, **kwargs):
        raise AssertionError("decoded a file the header refuses")

    monkeypatch.setattr(soundfile, "read", no_decoding)
    with pytest.raises(DataError, match=r"2\.0 s long: audio may last at most 1 s"):
        audio.read_wav(path, max_seconds=1)
    monkeypatch.setattr(audio, "MAX_BYTES", 1000)
    with pytest.raises(DataError, match="an audio file may hold at most 1,000"):
        audio.read_wav(path)


def test_bytes_are_read_with_the_same_checks(tmp_path):
    path = _write(tmp_path / "ok.wav", _tone())
    assert len(audio.wav_from_bytes(path.read_bytes()).samples) == 8000
    with pytest.raises(DataError, match="^upload: not a WAV"):
        audio.wav_from_bytes(b"RIFF nonsense")
