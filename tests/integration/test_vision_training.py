"""End to end: configs, short training runs on MNIST, evaluation, pictures, resume.

Needs the MNIST copy in ``../shared/data/mnist`` (or ``$ATTNKIT_DATA_DIR/mnist``);
the tests that read it are skipped, saying so, when it is missing.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest
import torch
import yaml
from PIL import Image
from safetensors.torch import load_file, save_file

from attnkit.checkpoint import read_json, read_meta
from attnkit.cli import main
from attnkit.config import read_yaml
from attnkit.errors import CheckpointError, ConfigError, TrainingError
from attnkit.families.vision.bundle import load_vision_model
from attnkit.families.vision.config import parse_config
from attnkit.families.vision.evaluate import evaluate_vision
from attnkit.families.vision.pictures import plot_vision
from attnkit.families.vision.train import train_vision
from attnkit.training import resume_config as rc

REPO = Path(__file__).resolve().parents[2]
CONFIGS = [
    "ram_mnist28",
    "ram_translated60",
    "ram_cluttered60",
    "sat_multidigit",
    "attnpool_cluttered60",
]


def mnist_dir() -> Path:
    env = os.environ.get("ATTNKIT_DATA_DIR")
    if env:
        return Path(env) / "mnist"
    return REPO.parent / "shared" / "data" / "mnist"


needs_mnist = pytest.mark.skipif(
    not mnist_dir().is_dir(), reason=f"MNIST copy not found: {mnist_dir()} is missing"
)


def quiet_train(**train) -> dict:
    return {
        "batch_size": 32,
        "lr": 3e-3,
        "device": "cpu",
        "progress": False,
        "verbose": False,
        **train,
    }


# ---------------------------------------------------------------- configs (no data needed)


@pytest.mark.parametrize("name", CONFIGS)
def test_shipped_configs_parse_and_comment_every_key(name):
    path = REPO / "configs" / f"{name}.yaml"
    cfg = parse_config(read_yaml(path), str(path))
    assert cfg.to_dict()["family"] == "vision"
    for number, line in enumerate(path.read_text().splitlines(), 1):
        if re.match(r"^\s*\w+:\s*\S", line) and not line.lstrip().startswith("#"):
            assert "#" in line, f"{path.name}:{number}: key without a comment: {line.strip()}"


def test_config_errors_name_the_key_and_list_valid_ones():
    base = {"family": "vision", "data": {"task": "mnist"}, "model": {"type": "ram"}, "train": {}}
    with pytest.raises(
        ConfigError,
        match=r"unknown key 'optimiser'; valid keys: family, output_dir, data, model, train",
    ):
        parse_config({**base, "optimiser": {}}, "x.yaml")
    with pytest.raises(
        ConfigError, match=r"x.yaml: model: unknown key 'glimpse'.*valid keys: glimpses"
    ):
        parse_config({**base, "model": {"type": "ram", "glimpse": 4}}, "x.yaml")
    with pytest.raises(ConfigError, match=r"model.type: 'rma' is not one of ram, show_attend_tell"):
        parse_config({**base, "model": {"type": "rma"}}, "x.yaml")
    with pytest.raises(ConfigError, match=r"reads data.task strips, not 'mnist'"):
        parse_config({**base, "model": {"type": "show_attend_tell"}}, "x.yaml")
    with pytest.raises(ConfigError, match=r"data.task: 'svhn' is not one of"):
        parse_config({**base, "data": {"task": "svhn"}}, "x.yaml")
    with pytest.raises(ConfigError, match=r"model.core: 'transformer'"):
        parse_config({**base, "model": {"type": "ram", "core": "transformer"}}, "x.yaml")
    with pytest.raises(ConfigError, match=r"train.batch_size: expected an integer"):
        parse_config({**base, "train": {"batch_size": "big"}}, "x.yaml")
    with pytest.raises(
        ConfigError, match=r"x.yaml: train.max_bad_updates: must be at least 1, got 0"
    ):
        parse_config({**base, "train": {"max_bad_updates": 0}}, "x.yaml")
    with pytest.raises(ConfigError, match=r"not a vision config"):
        parse_config({**base, "family": "seq2seq"}, "x.yaml")


# ---------------------------------------------------------------- training runs


@needs_mnist
def test_ram_learns_mnist_then_evaluates_plots_and_resumes(tmp_path):
    config = {
        "family": "vision",
        "data": {
            "task": "mnist",
            "directory": str(mnist_dir()),
            "train_size": 600,
            "dev_size": 200,
            "test_size": 200,
            "verify": False,
        },
        "model": {
            "type": "ram",
            "glimpses": 4,
            "hidden": 64,
            "glimpse_hidden": 64,
            "location_hidden": 32,
            "core": "lstm",
            "mc_samples": 2,
        },
        "train": quiet_train(epochs=4, scheduler="constant"),
    }
    best = train_vision(config, output_dir=tmp_path / "run")
    assert best == tmp_path / "run" / "best"
    read_meta(best, "vision")
    history = read_json(tmp_path / "run" / "last" / "trainer.json")["state"]["history"]
    assert len(history) == 4
    assert history[-1]["train_loss"] < 0.85 * history[0]["train_loss"]  # cross entropy goes down
    assert history[-1]["train_accuracy"] > history[0]["train_accuracy"]

    result = evaluate_vision(
        tmp_path / "run", "test", device="cpu"
    )  # the run dir works: best/ inside
    assert result["images"] == 200 and result["mc_samples"] == 2
    assert 0 <= result["error_pct"] < 90.0 and result["accuracy"] == pytest.approx(
        1 - result["error_pct"] / 100
    )
    assert evaluate_vision(best, "test", device="cpu") == result  # Monte Carlo paths are seeded

    png, gif = plot_vision(best, 5, f"{tmp_path / 'pics'}/")  # a directory: both pictures
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    with Image.open(gif) as image:
        assert image.n_frames == 4  # one frame per glimpse
    with pytest.raises(ConfigError, match="test split has images 0..199"):
        plot_vision(best, 200, tmp_path / "pics")

    # checkpoints written before the train keys were renamed: evaluate, plot and resume read them
    for name in ("best", "last"):
        _previous_version_config(tmp_path / "run" / name)
    assert evaluate_vision(best, "test", device="cpu") == result
    assert (
        main(["plot", "--model", str(best), "--image", "5", "-o", str(tmp_path / "old.png")]) == 0
    )

    config["train"]["epochs"] = 5
    train_vision(config, output_dir=tmp_path / "run", resume=True)
    trainer = read_json(tmp_path / "run" / "last" / "trainer.json")["state"]
    assert trainer["epoch"] == 5 and len(trainer["history"]) == 5
    assert "clip" in read_yaml(tmp_path / "run" / "last" / "config.yaml")["train"]


def _previous_version_config(checkpoint: Path) -> None:
    """Rewrite ``checkpoint/config.yaml`` with the train keys the previous version wrote."""
    saved = read_yaml(checkpoint / "config.yaml")
    train = saved["train"]
    for new, old in (
        ("clip", "grad_clip"),
        ("threads", "num_threads"),
        ("scheduler", "lr_schedule"),
    ):
        train[old] = train.pop(new)
    train["min_lr_ratio"] = train.pop("min_lr") / train["lr"]
    train["compile"] = train.pop("backend") == "compile"
    del train["warmup_steps"]
    train["warmup_epochs"] = 0.0
    train["output_dir"] = saved.pop("output_dir")
    (checkpoint / "config.yaml").write_text(yaml.safe_dump(saved), encoding="utf-8")


@needs_mnist
def test_reader_learns_a_handful_of_strips(tmp_path):
    config = {
        "family": "vision",
        "data": {
            "task": "strips",
            "directory": str(mnist_dir()),
            "max_digits": 3,
            "train_size": 96,
            "dev_size": 32,
            "test_size": 32,
            "resample": False,
            "verify": False,
        },
        "model": {
            "type": "show_attend_tell",
            "channels": [8, 16, 32],
            "embed": 16,
            "hidden": 64,
            "attention_dim": 32,
            "dropout": 0.0,
        },
        "train": quiet_train(epochs=6, batch_size=16, lr=5e-3, scheduler="constant"),
    }
    best = train_vision(config, output_dir=tmp_path / "run")
    history = read_json(best.parent / "last" / "trainer.json")["state"]["history"]
    assert history[-1]["train_loss"] < 0.7 * history[0]["train_loss"]
    result = evaluate_vision(best, device="cpu")
    assert result["images"] == 32 and result["task"] == "strips"
    assert plot_vision(best, 0, tmp_path / "reader.png") == [tmp_path / "reader.png"]
    (gif,) = plot_vision(best, 0, tmp_path / "reader.gif")
    assert gif == tmp_path / "reader.gif" and (tmp_path / "reader.png").is_file()
    with Image.open(gif) as image:
        assert image.n_frames >= 2  # the input, then one frame per output step


@needs_mnist
def test_attention_pooling_on_cluttered_and_the_time_budget(tmp_path, capsys):
    config = {
        "family": "vision",
        "data": {
            "task": "cluttered",
            "directory": str(mnist_dir()),
            "train_size": 256,
            "dev_size": 64,
            "test_size": 64,
            "verify": False,
        },
        "model": {"type": "attention_pooling", "channels": [8, 16], "attention_hidden": 8},
        "train": quiet_train(epochs=50, max_minutes=0.001, verbose=True),
    }
    best = train_vision(config, output_dir=tmp_path / "run")
    # the line of an evaluation is every family's, its planned epochs cut to the budget's
    logged = capsys.readouterr().err
    line = r"^update \d+ \(epoch 1/1\): dev error [\d.]+% \(best\), accuracy [\d.]+; train loss "
    assert re.search(line, logged, re.M), logged
    trainer = read_json(best.parent / "last" / "trainer.json")["state"]
    # the budget ran out in the first epoch: evaluated there, the rest of it left to a resume
    assert trainer["stopped"] == "budget" and trainer["epoch"] == 0 and trainer["batches_done"]
    assert evaluate_vision(best, device="cpu")["images"] == 64
    png, gif = plot_vision(best, 1, tmp_path)
    assert png.name == "attention_pooling-test1.png" and gif.is_file()


def test_missing_checkpoint_and_resume_errors(tmp_path):
    with pytest.raises(CheckpointError, match="no such checkpoint directory"):
        evaluate_vision(tmp_path / "nothing")
    config = {
        "family": "vision",
        "data": {"task": "mnist", "directory": str(tmp_path)},
        "model": {"type": "ram"},
        "train": quiet_train(),
    }
    with pytest.raises(CheckpointError, match="nothing to resume"):
        train_vision(config, output_dir=tmp_path / "run", resume=True)


# ---------------------------------------------------------------- resume and divergence


def _pooling_config(tmp_path, **train) -> dict:
    return {
        "family": "vision",
        "data": {
            "task": "mnist",
            "directory": str(mnist_dir()),
            "train_size": 96,
            "dev_size": 32,
            "test_size": 32,
            "verify": False,
        },
        "model": {"type": "attention_pooling", "channels": [4, 8], "attention_hidden": 4},
        "train": quiet_train(**train),
    }


@needs_mnist
@pytest.mark.parametrize(
    "tensor, value, needle",
    [
        ("optimizer.0.exp_avg", torch.zeros(2), "optimizer.0.exp_avg is float32 (2,)"),
        ("optimizer.1.exp_avg_sq", None, "optimizer.1.exp_avg_sq is float64"),
        ("rng.torch", torch.zeros(3, dtype=torch.uint8), "rng.torch is uint8 (3,)"),
    ],
)
def test_resume_refuses_damaged_trainer_state(tmp_path, tensor, value, needle):
    config = _pooling_config(tmp_path, epochs=1)
    train_vision(config, output_dir=tmp_path / "run")
    last = tmp_path / "run" / "last"
    tensors = load_file(str(last / "trainer.safetensors"))
    tensors[tensor] = tensors[tensor].double() if value is None else value
    save_file(tensors, str(last / "trainer.safetensors"))
    before = {p.name: p.read_bytes() for p in last.iterdir()}
    config["train"]["epochs"] = 2
    where = re.escape(f"{last / 'trainer.safetensors'}: {needle}")
    with pytest.raises(CheckpointError, match=where):
        train_vision(config, output_dir=tmp_path / "run", resume=True)
    assert {p.name: p.read_bytes() for p in last.iterdir()} == before
    info = read_json(last / "trainer.json")
    (last / "trainer.json").write_text(json.dumps({**info, "bogus": 1}))
    with pytest.raises(CheckpointError, match=r"trainer.json: unknown key 'bogus'"):
        train_vision(config, output_dir=tmp_path / "run", resume=True)


@needs_mnist
@pytest.mark.parametrize(
    "lr, needle",
    [
        (
            1e38,
            r"^update 1: the optimizer's step overflowed",
        ),  # lr / (1 - beta1) > float32's largest
        (1e30, r"^update \d+: 4 updates in a row had a non-finite loss or gradient norm"),
    ],
)
def test_a_diverging_vision_run_stops_naming_the_update(tmp_path, lr, needle):
    config = _pooling_config(
        tmp_path, epochs=10, batch_size=16, lr=lr, max_bad_updates=4, scheduler="constant"
    )
    with pytest.raises(TrainingError, match=needle):
        train_vision(config, output_dir=tmp_path / "run")
    for meta in (tmp_path / "run").rglob("meta.json"):
        load_vision_model(meta.parent)  # anything saved holds finite weights


@needs_mnist
def test_best_is_for_inference_and_resume_goes_on_with_the_runs_own_config(tmp_path, capsys):
    """best holds no optimizer or RNG (last does) and evaluates; ``attnkit train CONFIG --resume``
    without the first run's --sets goes on with the run's config, applies and says a --set resume
    can honour, and refuses one it cannot in one line."""
    path = tmp_path / "exp.yaml"
    path.write_text(yaml.safe_dump(_pooling_config(tmp_path, epochs=1)), encoding="utf-8")
    run = tmp_path / "run"
    train = ["train", str(path), "--output-dir", str(run)]
    assert main([*train, "--set", "train.lr=0.01", "--set", "model.attention_hidden=6"]) == 0
    best, last = run / "best", run / "last"
    assert not (best / "trainer.safetensors").exists() and (last / "trainer.safetensors").exists()
    assert "optimizer" not in read_json(best / "trainer.json")
    assert "optimizer" in read_json(last / "trainer.json")
    assert evaluate_vision(best, "test", device="cpu")["images"] == 32
    capsys.readouterr()

    assert main([*train, "--resume", "--set", "train.epochs=2"]) == 0
    err = capsys.readouterr().err.splitlines()
    assert f"{path} differs in model.attention_hidden, train.lr (" in err[0]
    assert "resume: train.epochs 1 -> 2" in err
    saved = read_yaml(last / "config.yaml")
    assert (saved["model"]["attention_hidden"], saved["train"]["lr"]) == (6, 0.01)
    assert read_json(last / "trainer.json")["state"]["epoch"] == 2

    assert main([*train, "--resume", "--set", "model.channels=[4, 4]"]) == 2
    errors = capsys.readouterr().err.strip().splitlines()
    assert errors == [
        f"attnkit: error: {last}: a resumed run cannot change model.channels ([4, 8] in the run, "
        "[4, 4] asked): leave out --set model.channels to go on with the run's value, or train "
        "afresh with --overwrite or another --output-dir (resume can change "
        + ", ".join(rc.VISION.honoured)
        + ")"
    ]
