"""Vision experiment files: every numeric train key range-checked, with the file and key named."""

import pytest

from attnkit.errors import ConfigError
from attnkit.training.vision import parse_config

BASE = {"family": "vision", "data": {"task": "mnist"}, "model": {"type": "ram"}}


@pytest.mark.parametrize(
    "key, value",
    [
        ("lr", -0.001),
        ("lr", 0),
        ("lr", float("nan")),
        ("lr", float("inf")),
        ("batch_size", 0),
        ("eval_batch_size", 0),
        ("epochs", 0),
        ("num_threads", -1),
        ("max_minutes", 0),
        ("max_minutes", -2.5),
        ("grad_clip", -1.0),
        ("min_lr_ratio", 1.5),
        ("lr_step_epochs", 0),
        ("lr_gamma", 0),
        ("warmup_epochs", -1.0),
        ("weight_decay", -0.1),
        ("patience", 0),
    ],
)
def test_out_of_range_train_values_name_file_and_key(key, value):
    with pytest.raises(ConfigError) as err:
        parse_config({**BASE, "train": {key: value}}, "v.yaml")
    assert f"v.yaml: train.{key}: " in str(err.value)


@pytest.mark.parametrize(
    "train",
    [
        {"num_threads": 0},
        {"num_threads": None},
        {"grad_clip": None},
        {"patience": None, "max_minutes": None},
        {"grad_clip": 0.0},
    ],
)
def test_defaults_and_off_values_are_accepted(train):
    cfg = parse_config({**BASE, "train": train}, "v.yaml")
    for key, value in train.items():
        assert getattr(cfg.train, key) == value
