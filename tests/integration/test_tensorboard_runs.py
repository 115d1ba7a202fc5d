"""End to end: what training writes for TensorBoard (seq2seq and vision), and tensorboard: false.

The vision runs read the MNIST copy in ``../shared/data/mnist`` (or ``$ATTNKIT_DATA_DIR/mnist``)
and are skipped, saying so, where it is missing.
"""

from __future__ import annotations

import time

import pytest
import yaml
from tensorboard.backend.event_processing import event_accumulator

from attnkit import checkpoint as ckpt
from attnkit.cli import main
from attnkit.families.vision.train import train_vision

pytestmark = pytest.mark.slow

TRAIN = {"train/loss", "train/accuracy", "train/lr", "train/skipped_updates"}
PICTURES = {"attention/dev0", "attention/dev1", "attention/dev2"}


def events(directory):
    accumulator = event_accumulator.EventAccumulator(
        str(directory), size_guidance={"scalars": 0, "images": 0}
    )
    accumulator.Reload()
    return accumulator


def seq2seq_config(tmp_path, **train) -> str:
    cfg = {
        "name": "tb",
        "data": {"task": "numbers", "languages": ["en"], "max_number": 199},
        "model": {
            "embedding_dim": 8,
            "encoder_hidden": 8,
            "decoder_hidden": 16,
            "attention_dim": 8,
            "dropout": 0.0,
        },
        "train": {
            "epochs": 1,
            "batch_size": 8,
            "eval_every": 10,
            "threads": 1,
            "progress": False,
            **train,
        },
        "decode": {"beam_size": 2, "max_len_cap": 30},
    }
    path = tmp_path / "exp.yaml"
    path.write_text(yaml.safe_dump(cfg), encoding="utf-8")
    return str(path)


def test_seq2seq_logs_scalars_dev_metrics_and_heatmaps_and_resume_appends(tmp_path):
    config, run = seq2seq_config(tmp_path), tmp_path / "run"
    assert main(["train", config, "--output-dir", str(run)]) == 0
    logged = events(run / "tensorboard")
    assert set(logged.Tags()["scalars"]) == TRAIN | {"train/tokens_per_s", "dev/exact_match"}
    assert set(logged.Tags()["images"]) == PICTURES
    history = ckpt.read_json(run / "last" / "trainer.json")["state"]["history"]
    dev = logged.Scalars("dev/exact_match")
    assert [e.step for e in dev] == [h["step"] for h in history]
    assert [e.value for e in dev] == pytest.approx([h["dev"]["exact_match"] for h in history])
    assert [e.step for e in logged.Scalars("train/loss")][:2] == [10, 20]  # and every 20 updates
    first = logged.Images("attention/dev0")[0]
    assert first.step == history[0]["step"]
    assert first.encoded_image_string[:8] == b"\x89PNG\r\n\x1a\n"

    time.sleep(1.1)  # event files are named by the second: the resumed run's sorts after
    last_step = history[-1]["step"]
    assert (
        main(["train", config, "--output-dir", str(run), "--resume", "--set", "train.epochs=2"])
        == 0
    )
    assert len(list((run / "tensorboard").iterdir())) == 2  # the same log, a second file
    loss_steps = [e.step for e in events(run / "tensorboard").Scalars("train/loss")]
    assert loss_steps == sorted(set(loss_steps)) and loss_steps[-1] > last_step

    # a fresh run over it starts a new log
    assert main(["train", config, "--output-dir", str(run), "--overwrite"]) == 0
    assert len(list((run / "tensorboard").iterdir())) == 1


def test_seq2seq_tensorboard_false_writes_no_event_files(tmp_path):
    run = tmp_path / "run"
    config = seq2seq_config(tmp_path, tensorboard=False)
    assert main(["train", config, "--output-dir", str(run), "--set", "train.epochs=1"]) == 0
    assert (run / "best").is_dir() and not (run / "tensorboard").exists()


def test_a_bad_tensorboard_value_is_one_line(tmp_path, capsys):
    code = main(
        [
            "train",
            seq2seq_config(tmp_path),
            "--output-dir",
            str(tmp_path / "run"),
            "--set",
            "train.tensorboard=maybe",
        ]
    )
    err = capsys.readouterr().err
    assert code == 2 and err.count("attnkit: error: ") == 1 and "train.tensorboard" in err


def vision_config(mnist, tensorboard: bool = True) -> dict:
    return {
        "family": "vision",
        "data": {
            "task": "mnist",
            "directory": str(mnist),
            "train_size": 96,
            "dev_size": 32,
            "test_size": 32,
            "verify": False,
        },
        "model": {
            "type": "ram",
            "glimpses": 3,
            "hidden": 32,
            "glimpse_hidden": 32,
            "location_hidden": 16,
            "mc_samples": 2,
        },
        "train": {
            "epochs": 2,
            "batch_size": 4,
            "device": "cpu",
            "progress": False,
            "verbose": False,
            "tensorboard": tensorboard,
        },
    }


def test_vision_logs_scalars_dev_error_and_glimpse_paths_without_changing_training(
    tmp_path, shared_data
):
    mnist = shared_data("mnist")
    train_vision(vision_config(mnist), output_dir=tmp_path / "on")
    logged = events(tmp_path / "on" / "tensorboard")
    assert set(logged.Tags()["scalars"]) == TRAIN | {
        "train/images_per_s",
        "dev/error_pct",
        "dev/accuracy",
    }
    assert set(logged.Tags()["images"]) == PICTURES
    history = ckpt.read_json(tmp_path / "on" / "last" / "trainer.json")["state"]["history"]
    assert [e.value for e in logged.Scalars("dev/error_pct")] == pytest.approx(
        [h["dev"]["error_pct"] for h in history]
    )
    assert [e.step for e in logged.Scalars("dev/error_pct")] == [24, 48]  # 96 images / 4 a step
    assert [e.step for e in logged.Scalars("train/loss")] == [20, 24, 40, 48]

    train_vision(vision_config(mnist, tensorboard=False), output_dir=tmp_path / "off")
    assert not (tmp_path / "off" / "tensorboard").exists()
    on = ckpt.read_tensors(tmp_path / "on" / "last" / "model.safetensors")
    off = ckpt.read_tensors(tmp_path / "off" / "last" / "model.safetensors")
    assert all(on[name].equal(off[name]) for name in on)  # the pictures draw no training randomness
