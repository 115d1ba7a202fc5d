"""The speech family: Listen, Attend and Spell trained through the one driver on spoken numbers,
loaded back, transcribing and evaluating."""

from __future__ import annotations

import json

import numpy as np
import pytest

pytest.importorskip("espeakng_loader")

import attnkit  # noqa: E402
from attnkit.cli import main  # noqa: E402
from attnkit.config import applicable  # noqa: E402
from attnkit.data.audio import Audio, write_wav  # noqa: E402
from attnkit.data.tasks import speech  # noqa: E402
from attnkit.errors import ConfigError, InputError  # noqa: E402
from attnkit.families.speech.config import describe, parse_config  # noqa: E402
from attnkit.families.speech.train import train_speech  # noqa: E402


def _config(tmp_path, **train) -> dict:
    return {
        "family": "speech",
        "output_dir": str(tmp_path / "run"),
        "data": {"languages": ["en"], "max_number": 19, "directory": str(tmp_path / "audio")},
        "model": {"listener_hidden": 32, "speller_hidden": 64, "attention_dim": 32, "dropout": 0},
        "train": {
            "epochs": 6,
            "batch_size": 4,
            "lr": 0.003,
            "patience": None,
            "progress": False,
            "verbose": False,
            "tensorboard": False,
            "device": "cpu",
            **train,
        },
    }


def test_a_few_epochs_lower_the_loss_and_the_model_loads_and_spells(tmp_path, capsys):
    best = train_speech(_config(tmp_path))
    lines = [json.loads(x) for x in (tmp_path / "run" / "metrics.jsonl").read_text().splitlines()]
    losses = [x["loss"] for x in lines if x["kind"] == "train"]
    assert len(losses) == 6 and losses[-1] < 0.8 * losses[0]
    model = attnkit.load(best)
    assert type(model).__name__ == "SpeechModel" and model.family == "speech"
    item = speech.generate(0, ("en",), 19)["test"][0]
    heard = model.transcribe(item)
    assert set(heard.digits) <= set("0123456789") and len(heard.outputs) >= 1
    assert heard.attention.shape[0] == len(heard.outputs)
    assert np.allclose(heard.attention.sum(-1), 1, atol=1e-5)
    wav = write_wav(
        tmp_path / "n.wav", Audio(speech.speak(item, tmp_path / "audio").samples, 22_050)
    )
    through_file = model.transcribe(wav)  # the same audio, 16-bit, through a WAV file
    assert np.allclose(through_file.features, heard.features, atol=0.05)
    write_wav(tmp_path / "slow.wav", Audio(np.full(800, 0.1, np.float32), 8_000))
    with pytest.raises(InputError, match="8000 Hz; this model hears 22050 Hz"):
        model.transcribe(tmp_path / "slow.wav")
    scores = model.evaluate("test", out=tmp_path / "eval")
    assert scores.metric == "exact_match" and set(scores["greedy"]) >= {"exact_match", "cer", "en"}
    assert (tmp_path / "eval" / "scores.json").is_file()
    _commands(best, tmp_path, capsys)


def _commands(best, tmp_path, capsys):
    """attnkit plot and evaluate reach the family through its hooks."""
    picture = tmp_path / "seventeen.png"
    assert main(["plot", "--model", str(best), "en: 17", "-o", str(picture)]) == 0
    assert picture.stat().st_size > 1000 and "heard: " in capsys.readouterr().out
    assert main(["plot", "--model", str(best), "en: 1x", "-o", str(picture)]) == 2
    assert "at most 6 digits" in capsys.readouterr().err
    assert main(["plot", "--model", str(best), str(tmp_path / "none.wav"), "-o", str(picture)]) == 2
    assert "no such audio file" in capsys.readouterr().err
    assert main(["evaluate", "--model", str(best), "--split", "dev", "--json"]) == 0
    assert '"exact_match"' in capsys.readouterr().out
    assert main(["evaluate", "--model", str(best), "--split", "dev"]) == 0  # the scores table
    assert "(numbers, " in capsys.readouterr().out  # its first line names the task


def test_the_experiment_file_is_checked_and_described(tmp_path):
    cfg = parse_config(_config(tmp_path), "x.yaml")
    assert cfg.model.attention == "location" and cfg.train.batch_size == 4
    assert parse_config(cfg.to_dict()).to_dict() == cfg.to_dict()
    bad = _config(tmp_path)
    bad["model"]["attention"] = "psychic"
    with pytest.raises(ConfigError, match=r"x\.yaml: model\.attention"):
        parse_config(bad, "x.yaml")
    assert "location" in describe(_config(tmp_path)).model
    assert "CTC" in describe({"model": {"kind": "ctc"}}).model
    assert "Transformer" in describe({"model": {"kind": "transformer"}}).model
    stacked = _config(tmp_path)
    stacked["model"]["stack"] = 0
    with pytest.raises(ConfigError, match=r"x\.yaml: model\.stack: must be 1 to 8, got 0"):
        parse_config(stacked, "x.yaml")


def test_a_warm_up_raises_the_rate_linearly_then_holds_it(tmp_path):
    """``train.warmup_steps``: update k (1-based) of the warm-up trains at lr x k / warm-up, and
    every update after it at lr; a negative warm-up is refused in one line naming the key."""
    config = _config(tmp_path, epochs=2, warmup_steps=3, eval_every=1)
    config["model"] = {"kind": "ctc", "stack": 2, "listener_hidden": 16, "pyramid_layers": 1}
    train_speech(config)
    state = json.loads((tmp_path / "run" / "last" / "trainer.json").read_text())["state"]
    rates = {entry["step"]: entry["lr"] for entry in state["history"]}
    assert len(rates) >= 5  # the warm-up and at least two updates past it
    expected = {step: 0.003 * min(step, 3) / 3 for step in rates}
    assert rates == pytest.approx(expected)
    shown = applicable(parse_config(config).train)  # what a report shows: no scheduler key
    assert shown["warmup_steps"] == 3
    bad = _config(tmp_path, warmup_steps=-1)
    with pytest.raises(
        ConfigError, match=r"^x\.yaml: train\.warmup_steps: must be at least 0, got -1$"
    ):
        parse_config(bad, "x.yaml")


def test_the_ctc_kind_trains_loads_and_spells_without_attention(tmp_path):
    config = _config(tmp_path, epochs=2)
    config["model"] = {"kind": "ctc", "stack": 2, "listener_hidden": 16, "pyramid_layers": 1}
    best = train_speech(config)
    lines = [json.loads(x) for x in (tmp_path / "run" / "metrics.jsonl").read_text().splitlines()]
    losses = [x["loss"] for x in lines if x["kind"] == "train"]
    assert len(losses) == 2 and all(np.isfinite(losses))
    model = attnkit.load(best)
    assert "CTC" in repr(model)
    item = speech.generate(0, ("en",), 19)["test"][0]
    heard = model.transcribe(item)
    assert set(heard.digits) <= set("0123456789") and heard.stride == 4
    assert heard.attention.shape == (len(heard.outputs), len(heard.features) // 4)
    scores = model.evaluate("test")
    assert set(scores["greedy"]["en"]) == {"exact_match", "cer", "wer"}


def test_the_transformer_kind_trains_loads_and_transcribes_with_cross_attention(tmp_path):
    config = _config(tmp_path, epochs=2)
    config["model"] = {
        "kind": "transformer",
        "model_dim": 32,
        "heads": 2,
        "ff_dim": 64,
        "encoder_layers": 1,
        "decoder_layers": 1,
    }
    best = train_speech(config)
    lines = [json.loads(x) for x in (tmp_path / "run" / "metrics.jsonl").read_text().splitlines()]
    losses = [x["loss"] for x in lines if x["kind"] == "train"]
    assert len(losses) == 2 and all(np.isfinite(losses))
    model = attnkit.load(best)
    assert "Transformer" in repr(model)
    item = speech.generate(0, ("en",), 19)["test"][0]
    heard = model.transcribe(item)
    assert set(heard.digits) <= set("0123456789") and heard.stride == 4
    frames = -(-len(heard.features) // 4)  # the front end keeps ceil(T / 4) frames
    assert heard.attention.shape == (len(heard.outputs), frames)
    assert heard.weights == "attention"
    assert np.allclose(heard.attention.sum(1), 1.0, atol=1e-5)
    assert heard.to_dict()["digits"] == heard.digits  # what the endpoint and .show() draw
    scores = model.evaluate("test")
    assert set(scores["greedy"]["en"]) == {"exact_match", "cer", "wer"}
