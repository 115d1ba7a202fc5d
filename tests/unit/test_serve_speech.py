"""The explorer's speech endpoint: ``GET /v1/models`` describes a speech model, ``POST
/v1/transcribe`` answers an uploaded WAV (base64) or a number to synthesise with what
``Transcript.to_dict`` gives in Python, and bad audio is one 422 naming the field. Untrained
tiny models."""

from __future__ import annotations

import base64
import importlib.util

import numpy as np
import pytest
import torch
from fastapi.testclient import TestClient

import attnkit
from attnkit.checkpoint import write_checkpoint
from attnkit.data.audio import Audio, wav_bytes
from attnkit.families.serving import Limits
from attnkit.families.speech.bundle import build_model
from attnkit.families.speech.config import parse_config
from attnkit.serve.app import ServeSettings, create_app

RATE = 22_050


def _checkpoint(directory, audio_dir, **model):
    cfg = parse_config(
        {
            "family": "speech",
            "data": {"languages": ["de", "en"], "max_number": 99, "directory": str(audio_dir)},
            "model": {"listener_hidden": 16, "speller_hidden": 32, "attention_dim": 16, **model},
        }
    )
    torch.manual_seed(0)
    write_checkpoint(directory, "speech", build_model(cfg).state_dict(), cfg.to_dict(), {})
    return directory


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    root = tmp_path_factory.mktemp("speech")
    las = _checkpoint(root / "las" / "best", root / "audio")
    ctc = _checkpoint(root / "ctc" / "best", root / "audio", kind="ctc", pyramid_layers=1)
    return las, ctc


@pytest.fixture(scope="module")
def client(models):
    settings = ServeSettings(models=list(models), names=["las", "ctc"], limits=Limits())
    with TestClient(create_app(settings)) as c:
        yield c


def _wav(seconds: float = 0.5, rate: int = RATE) -> tuple[np.ndarray, str]:
    time = np.arange(int(seconds * rate)) / rate
    samples = (0.3 * np.sin(2 * np.pi * 300 * time)).astype(np.float32)
    return samples, base64.b64encode(wav_bytes(Audio(samples, rate))).decode("ascii")


def test_models_describe_the_speech_models(client):
    las, ctc = client.get("/v1/models").json()["models"]
    assert (las["family"], las["has_attention"], las["languages"]) == ("speech", True, ["de", "en"])
    assert ctc["has_attention"] is False and "CTC" in ctc["attention"]


def test_the_example_is_a_number_the_model_knows_in_its_first_language(client):
    las, _ = client.get("/v1/models").json()["models"]
    example = las["example"]
    assert example["language"] == las["languages"][0]
    assert 0 <= int(example["number"]) <= 99  # the fixture's max_number
    body = client.post("/v1/transcribe", json={"model": "las", **example}).json()
    assert body["spoken"]  # synthesised: its words are there


@pytest.mark.parametrize("name", ["las", "ctc"])
def test_an_uploaded_wav_is_heard_as_in_python(client, models, name):
    samples, wav = _wav()
    body = client.post("/v1/transcribe", json={"model": name, "wav": wav}).json()
    loaded = attnkit.load(models[0] if name == "las" else models[1])
    expected = loaded.transcribe(Audio(np.round(samples * 32767) / 32767, RATE)).to_dict()
    assert body["model"] == name and body["digits"] == expected["digits"]
    assert body["outputs"] == expected["outputs"] and body["spoken"] is None
    np.testing.assert_allclose(body["weights"], expected["weights"], atol=2e-3)
    weights, features = np.asarray(body["weights"]), np.asarray(body["features"])
    assert weights.shape == (len(body["outputs"]), len(features) // body["stride"])
    assert body["weights_are"] == ("attention" if name == "las" else "posterior")
    assert body["audio"].startswith("data:audio/wav;base64,") and body["words"] == []


@pytest.mark.parametrize(
    ("json", "field", "message"),
    [
        ({"wav": "not base64!"}, "wav", "not base64"),
        ({"wav": base64.b64encode(b"RIFF....WAVE").decode()}, "wav", "wav"),
        ({"wav": _wav(rate=16_000)[1]}, "audio", "16000 Hz; this model hears 22050 Hz"),
        ({"wav": _wav()[1], "number": "7"}, "wav", "not both"),
        ({"language": "de"}, "number", "give language and number"),
        ({"language": "xx", "number": "7"}, "language", "give one of"),
        ({"language": "de", "number": "9x"}, "number", "at most 6 digits"),
    ],
)
def test_bad_requests_are_one_line_naming_the_field(client, json, field, message):
    answer = client.post("/v1/transcribe", json=json)
    assert answer.status_code == 422, answer.text
    assert message in answer.text and field in answer.text


@pytest.mark.skipif(
    importlib.util.find_spec("espeakng_loader") is None,
    reason="pip install attnkit[speech] (eSpeak NG) to synthesise a number",
)
def test_a_number_is_synthesised_heard_and_its_words_timed(client):
    body = client.post("/v1/transcribe", json={"language": "de", "number": "97"}).json()
    assert body["spoken"] == "siebenundneunzig"
    assert [w[0] for w in body["words"]] == ["sieben", "und", "neunzig"]
    frames = len(body["features"])
    assert all(0 <= first < stop <= frames + 1 for _, first, stop in body["words"])
