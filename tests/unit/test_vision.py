"""Vision experiment files: every numeric train key range-checked, with the file and key named;
the train keys of earlier versions refused in a file and translated in a saved checkpoint."""

import pytest
import torch
import yaml

from attnkit.checkpoint import write_checkpoint
from attnkit.config import apply_overrides
from attnkit.errors import CheckpointError, ConfigError
from attnkit.families.vision.bundle import VisionBundle, load_vision, load_vision_model
from attnkit.families.vision.config import parse_config
from attnkit.families.vision.kinds import MODEL_TYPES
from attnkit.models.vision import VISION_MODELS

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
        ("threads", -1),
        ("max_minutes", 0),
        ("max_minutes", -2.5),
        ("clip", -1.0),
        ("min_lr", -1e-5),
        ("lr_step_epochs", 0),
        ("lr_gamma", 0),
        ("warmup_steps", -1),
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
        {"threads": 0},
        {"threads": None},
        {"clip": None},
        {"patience": None, "max_minutes": None},
        {"clip": 0.0},
    ],
)
def test_defaults_and_off_values_are_accepted(train):
    cfg = parse_config({**BASE, "train": train}, "v.yaml")
    for key, value in train.items():
        assert getattr(cfg.train, key) == value


#: a vision train section as the previous version wrote it into a checkpoint's config.yaml
OLD_TRAIN = {
    "epochs": 3,
    "lr": 2e-3,
    "lr_schedule": "step",
    "min_lr_ratio": 0.01,
    "warmup_epochs": 0.0,
    "grad_clip": None,
    "num_threads": 2,
    "compile": True,
    "output_dir": "runs/old",
}


@pytest.mark.parametrize(
    "old, new",
    [
        ("grad_clip", "renamed to train.clip"),
        ("num_threads", "renamed to train.threads"),
        ("lr_schedule", "renamed to train.scheduler"),
        ("min_lr_ratio", "replaced by train.min_lr"),
        ("warmup_epochs", "replaced by train.warmup_steps"),
        ("compile", "replaced by train.backend"),
        ("output_dir", "moved to output_dir at the top level"),
    ],
)
def test_an_old_train_key_in_a_file_or_set_names_the_new_one(old, new):
    with pytest.raises(ConfigError) as err:
        parse_config({**BASE, "train": {old: OLD_TRAIN[old]}}, "v.yaml")
    assert str(err.value).startswith(f"v.yaml: train.{old}: {new}")
    assert "\n" not in str(err.value)
    with pytest.raises(ConfigError, match=f"train.{old}: {new}"):
        parse_config(apply_overrides(BASE, [f"train.{old}={OLD_TRAIN[old]}"]), "v.yaml")


def test_compile_false_is_the_default_and_is_dropped():
    assert parse_config({**BASE, "train": {"compile": False}}).train.backend == "auto"


def test_a_saved_config_with_the_old_keys_is_translated():
    cfg = parse_config({**BASE, "train": OLD_TRAIN}, "config.yaml", user=False)
    t = cfg.train
    assert (t.clip, t.threads, t.scheduler, t.backend) == (None, 2, "step", "compile")
    assert t.min_lr == pytest.approx(2e-3 * 0.01) and t.warmup_steps == 0
    assert cfg.output_dir == "runs/old"


def test_a_checkpoint_written_with_the_old_keys_loads(tmp_path):
    """A checkpoint of the previous version (config.yaml with the old train keys) still loads
    for evaluate and plot, with the same weights."""
    model_cfg = parse_config(BASE).model
    model = MODEL_TYPES["ram"].build(model_cfg)
    config = {**BASE, "model": {"type": "ram", **vars(model_cfg)}, "train": OLD_TRAIN}
    write_checkpoint(tmp_path / "old", "vision", model.state_dict(), config, {})
    cfg, family, loaded = load_vision_model(tmp_path / "old")
    assert family is MODEL_TYPES["ram"] and cfg.train.clip is None
    saved, now = model.state_dict(), loaded.state_dict()
    assert all(torch.equal(saved[k], now[k]) for k in saved)


@pytest.mark.parametrize("model_type", sorted(VISION_MODELS))
def test_every_vision_model_type_saves_and_loads_as_a_bundle(tmp_path, model_type):
    """A bundle written by the checkpoint package is read back (from the run directory too) as
    the same model type with the same weights, on the device asked for, in eval mode."""
    task = VISION_MODELS[model_type].tasks[0]
    cfg = parse_config({**BASE, "data": {"task": task}, "model": {"type": model_type}})
    torch.manual_seed(0)
    bundle = VisionBundle(VISION_MODELS[model_type].build(cfg.model), cfg)
    bundle.save(tmp_path / "run" / "best", {})
    loaded = load_vision(tmp_path / "run", torch.device("cpu"))  # the run holding best/
    assert type(loaded.model) is type(bundle.model) and not loaded.model.training
    assert loaded.config.to_dict() == cfg.to_dict()
    saved, now = bundle.model.state_dict(), loaded.model.state_dict()
    assert saved.keys() == now.keys() and all(torch.equal(saved[k], now[k]) for k in saved)
    assert MODEL_TYPES[model_type].config_cls is VISION_MODELS[model_type].config_cls


def test_a_vision_checkpoint_of_another_shape_is_refused_naming_the_file(tmp_path):
    cfg = parse_config(BASE)
    VisionBundle(VISION_MODELS["ram"].build(cfg.model), cfg).save(tmp_path / "ckpt")
    bigger = parse_config({**BASE, "model": {"type": "ram", "hidden": 64}})
    (tmp_path / "ckpt" / "config.yaml").write_text(yaml.safe_dump(bigger.to_dict()))
    with pytest.raises(CheckpointError, match="model.safetensors"):
        load_vision(tmp_path / "ckpt", torch.device("cpu"))
