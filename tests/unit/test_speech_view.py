"""Showing what a speech model heard: the transcript's data, the picture (the spectrogram, the
path of each output's most weighed frame, the gold word boundaries) and the inline view's
self-contained HTML (the spectrogram, the weights and the audio embedded as a WAV). Untrained
tiny models: nothing here needs eSpeak."""

from __future__ import annotations

import base64
import io
import json
import re

import numpy as np
import pytest
import soundfile

from attnkit.errors import InputError
from attnkit.families.speech.bundle import build_model
from attnkit.families.speech.config import parse_config
from attnkit.families.speech.model import SpeechModel, Transcript

RATE, HOP = 22_050, 220


def _model(**model) -> SpeechModel:
    config = {
        "family": "speech",
        "data": {"languages": ["en"], "max_number": 19},
        "model": {"listener_hidden": 16, "speller_hidden": 32, "attention_dim": 16, **model},
    }
    cfg = parse_config(config)
    return SpeechModel(cfg, build_model(cfg).eval())


def _tone(seconds: float = 0.6) -> np.ndarray:
    time = np.arange(int(seconds * RATE)) / RATE
    return (0.3 * np.sin(2 * np.pi * 440 * time) * np.linspace(0, 1, time.size)).astype(np.float32)


def _transcript(words=None) -> Transcript:
    """A hand-made transcript whose weights peak at known listener frames."""
    features = np.random.default_rng(0).normal(size=(40, 8)).astype(np.float32)  # (T, F)
    weights = np.full((3, 10), 0.01)  # (U, S): stride 4
    for u, s in enumerate((7, 2, 9)):
        weights[u, s] = 1.0
    weights /= weights.sum(1, keepdims=True)
    return Transcript("97", ["9", "7", "</s>"], weights, features, 4, words, _tone(0.4))


def test_a_transcript_keeps_the_audio_and_its_weights_cover_the_listener_frames():
    samples = _tone()
    heard = _model().transcribe(samples)
    assert heard.attention.shape == (len(heard.outputs), len(heard.features) // heard.stride)
    assert np.allclose(heard.attention.sum(-1), 1, atol=1e-5)
    assert np.array_equal(heard.samples, samples) and heard.weights == "attention"
    assert (heard.sample_rate, heard.hop) == (RATE, HOP)
    ctc = _model(kind="ctc", stack=2, pyramid_layers=1).transcribe(samples)
    assert ctc.weights == "posterior" and ctc.attention.shape[1] == len(ctc.features) // 4


def test_the_picture_draws_the_path_through_the_most_weighed_frames_and_the_word_edges():
    words = [("ninety", 2, 19), ("seven", 21, 37)]
    fig = _transcript(words).plot()
    top, bottom = fig.axes[:2]
    path = top.lines[0]
    assert np.allclose(path.get_xdata(), (np.array([7, 2, 9]) + 0.5) * 4)
    edges = sorted(line.get_xdata()[0] for line in top.lines[1:])
    assert edges == [1.5, 18.5, 20.5, 36.5]
    labels = {text.get_text() for text in top.texts}
    assert {"ninety", "seven", "9", "7", "</s>"} <= labels
    assert bottom.images[0].get_array().shape == (3, 40)  # weights upsampled to feature frames
    assert "attention" in bottom.get_title()
    ctc = _transcript()
    ctc.weights = "posterior"
    assert "posterior" in ctc.plot().axes[1].get_title()


def test_the_plot_is_saved_where_asked(tmp_path):
    _transcript([("ninety", 2, 19)]).plot(tmp_path / "heard.png").clear()
    assert (tmp_path / "heard.png").read_bytes()[:4] == b"\x89PNG"


def test_the_inline_view_embeds_the_audio_the_weights_and_a_static_picture():
    heard = _transcript([("ninety", 2, 19)])
    page = heard._repr_html_()
    data = json.loads(re.search(r'id="[^"]+-data">(.*?)</script>', page, re.S).group(1))
    assert data["kind"] == "listening" and data["outputs"] == ["9", "7", "</s>"]
    assert np.array(data["weights"]).shape == (3, 10) and np.array(data["features"]).shape == (
        40,
        8,
    )
    assert (data["stride"], data["hop"], data["rate"]) == (4, HOP, RATE)
    assert data["words"] == [["ninety", 2, 19]]
    wav = base64.b64decode(data["audio"].removeprefix("data:audio/wav;base64,"))
    samples, rate = soundfile.read(io.BytesIO(wav))
    assert rate == RATE and np.allclose(samples, heard.samples, atol=1e-3)
    assert 'class="attnkit-static"' in page and "data:image/png;base64," in page
    assert "</script" not in data["audio"]
    heard.samples = None
    with pytest.raises(InputError, match="no audio"):
        heard._repr_html_()


def test_show_writes_a_page_outside_a_notebook():
    path = _transcript().show()
    assert path is not None and path.read_text(encoding="utf-8").startswith("<!doctype html>")
    path.unlink()
