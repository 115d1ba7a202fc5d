"""A report shows the run's config with only the keys that apply to it: a key its other settings
ignore (``model.heads`` beside Bahdanau attention, ``train.lr_factor`` beside a cosine schedule,
``data.vocab_size`` without sentencepiece) is left out; the same key is shown where it is read."""

from __future__ import annotations

import html
import re

import yaml

import attnkit
from attnkit.config import applicable
from attnkit.families.seq2seq.config import experiment_from_dict
from attnkit.families.vision.config import parse_config


def _config(**sections) -> dict:
    return applicable(experiment_from_dict({"data": {"task": "numbers"}, **sections}))


def test_keys_other_settings_ignore_are_left_out():
    shown = _config(model={"attention": "bahdanau"}, train={"scheduler": "cosine"})
    assert "heads" not in shown["model"] and "window" not in shown["model"]
    assert "attention_dim" in shown["model"] and shown["model"]["attention"] == "bahdanau"
    assert {"lr_factor", "lr_patience"}.isdisjoint(shown["train"])
    assert {"min_lr", "warmup_steps", "epochs"} <= set(shown["train"])
    assert "vocab_size" not in shown["data"] and shown["data"]["task"] == "numbers"


def test_the_same_keys_are_shown_where_they_are_read():
    shown = _config(
        data={"task": "numbers", "src_level": "sentencepiece"},
        model={"attention": "multihead"},
        train={"scheduler": "plateau"},
    )
    assert shown["model"]["heads"] == 4 and shown["data"]["vocab_size"] == 8000
    assert {"lr_factor", "lr_patience", "min_lr"} <= set(shown["train"])
    assert "warmup_steps" not in shown["train"]  # the plateau schedule has no warm-up
    none = _config(model={"attention": "none"})["model"]
    assert "attention_dim" not in none and "input_feeding" not in none


def test_a_vision_configs_step_keys_only_with_the_step_schedule():
    def train(scheduler: str) -> dict:
        given = {"family": "vision", "model": {"type": "ram"}, "train": {"scheduler": scheduler}}
        return applicable(parse_config(given).train)

    cosine, step = train("cosine"), train("step")
    assert {"lr_step_epochs", "lr_gamma"}.isdisjoint(cosine) and "min_lr" in cosine
    assert {"lr_step_epochs", "lr_gamma"} <= set(step) and "min_lr" not in step


def _report_config(path) -> dict:
    page = path.read_text(encoding="utf-8")
    block = re.search(r"Config</h2></summary><pre>(.*?)</pre>", page, re.S)
    return yaml.safe_load(html.unescape(block.group(1)))


def test_the_evaluation_report_shows_the_applicable_config(tmp_path):
    model = attnkit.load("zoo:numbers-none", device="cpu")
    scores = model.evaluate(split="test", beam=1, out=tmp_path)
    config = _report_config(scores.out / "report.html")
    assert config["model"]["attention"] == "none" and config["model"]["decoder_hidden"] == 128
    assert {"attention_dim", "heads", "input_feeding"}.isdisjoint(config["model"])
    assert "vocab_size" not in config["data"]  # the numbers task reads characters
    assert config["train"]["scheduler"] == "plateau" and "lr_factor" in config["train"]
