"""``--resume`` of the memory-network and pointer families (training/resumable.py): a run stopped
by SIGTERM in the middle of an epoch and resumed ends with the weights, the best score and the
dev scores of a run never stopped, bit for bit (one CPU thread, the same seed); a damaged
``last/`` is one line naming the file and key."""

from __future__ import annotations

import json
import os
import signal

import pytest
import torch
from safetensors.torch import load_file, save_file

import attnkit
from attnkit.errors import CheckpointError, ConfigError, TrainingInterrupted
from attnkit.families.memnet.adapter import MemnetAdapter
from attnkit.families.pointer.train import PointerAdapter

QUIET = {"train.tensorboard": False, "train.threads": 1, "train.progress": False}
MEMNET = {
    **QUIET,
    "train.verbose": False,
    "train.epochs": 3,
    "train.batch_size": 32,  # 180 training questions: 6 updates an epoch
    "train.linear_start": 1,
    "train.lr_step_epochs": 1,  # the step schedule halves the rate within the run (counted
    # from the end of linear start, as the shipped config does)
    "model.hops": 2,
    "model.noise": 0.2,  # the random-noise stream must go on where it stopped
}
POINTER = {
    **QUIET,
    "data.points": 5,
    "data.train_size": 300,  # 10 updates an epoch
    "data.dev_size": 40,
    "data.test_size": 10,
    "train.epochs": 3,
    "train.batch_size": 32,
    "model.hidden": 12,
    "model.attention_dim": 12,
}
FAMILIES = {
    "memnet": ("configs/babi_memn2n.yaml", MEMNET, MemnetAdapter, 9),  # epoch 2, batch 3
    "pointer": ("configs/pointer_sort10.yaml", POINTER, PointerAdapter, 14),  # epoch 2, batch 4
}


def _settings(family, babi_dir):
    config, overrides, _, _ = FAMILIES[family]
    if family == "memnet":
        overrides = {**overrides, "data.directory": str(babi_dir)}
    return config, overrides


def _stop_at(monkeypatch, adapter_cls, update):
    """SIGTERM to this process during update ``update``: the loop saves last/ after it."""
    step = adapter_cls.step

    def stepping(self, batch, number):
        if number == update:
            os.kill(os.getpid(), signal.SIGTERM)
        return step(self, batch, number)

    monkeypatch.setattr(adapter_cls, "step", stepping)


def _dev_scores(run):
    history = json.loads((run / "last" / "trainer.json").read_text())["state"]["history"]
    return [{k: v for k, v in h.items() if "dev" in k} for h in history]


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_a_run_stopped_mid_epoch_and_resumed_equals_one_never_stopped(
    family, babi_dir, tmp_path, monkeypatch
):
    config, overrides = _settings(family, babi_dir)
    _, _, adapter_cls, stop = FAMILIES[family]
    straight = attnkit.train(config, overrides=overrides, output_dir=tmp_path / "a")
    with monkeypatch.context() as patch:
        _stop_at(patch, adapter_cls, stop)
        with pytest.raises(TrainingInterrupted, match=f"update {stop} "):
            attnkit.train(config, overrides=overrides, output_dir=tmp_path / "b")
    stopped = json.loads((tmp_path / "b" / "last" / "trainer.json").read_text())["state"]
    assert (stopped["epoch"], stopped["step"]) == (1, stop) and stopped["batches_done"] > 0
    resumed = attnkit.train(config, overrides=overrides, output_dir=tmp_path / "b", resume=True)
    for name in ("last", "best"):
        a = load_file(straight.directory / name / "model.safetensors")
        b = load_file(resumed.directory / name / "model.safetensors")
        assert a.keys() == b.keys()
        assert all(torch.equal(a[k], b[k]) for k in a), f"{name} differs after resuming"
    assert _dev_scores(tmp_path / "a") == _dev_scores(tmp_path / "b")
    trainer = json.loads((tmp_path / "b" / "last" / "trainer.json").read_text())["state"]
    assert (
        trainer["step"]
        == json.loads((tmp_path / "a" / "last" / "trainer.json").read_text())["state"]["step"]
    )


def test_more_epochs_on_resume_and_what_it_cannot_change(babi_dir, tmp_path):
    config, overrides = _settings("pointer", babi_dir)
    first = {**overrides, "train.epochs": 1}
    attnkit.train(config, overrides=first, output_dir=tmp_path / "run")
    again = attnkit.train(
        config, overrides={**first, "train.epochs": 2}, output_dir=tmp_path / "run", resume=True
    )
    trainer = json.loads((again.directory / "last" / "trainer.json").read_text())["state"]
    assert trainer["epoch"] == 2 and [h["epoch"] for h in trainer["history"]] == [1, 2]
    with pytest.raises(ConfigError, match="cannot change model.hidden"):
        attnkit.train(config, {"model.hidden": 8}, output_dir=tmp_path / "run", resume=True)
    with pytest.raises(CheckpointError, match="nothing to resume"):
        attnkit.train(config, overrides=first, output_dir=tmp_path / "none", resume=True)


def test_a_damaged_noise_stream_is_one_line(babi_dir, tmp_path):
    config, overrides = _settings("memnet", babi_dir)
    first = {**overrides, "train.epochs": 1}
    attnkit.train(config, overrides=first, output_dir=tmp_path / "run")
    path = tmp_path / "run" / "last" / "trainer.safetensors"
    tensors = load_file(path)
    assert "rng.noise" in tensors and "rng.torch" in tensors
    tensors["rng.noise"] = tensors["rng.noise"][:10]
    save_file(tensors, path)
    with pytest.raises(CheckpointError, match=r"trainer.safetensors: rng.noise is uint8 \(10,\)"):
        attnkit.train(config, overrides=first, output_dir=tmp_path / "run", resume=True)
    del tensors["rng.noise"]
    save_file(tensors, path)
    with pytest.raises(CheckpointError, match="'rng.noise' is missing"):
        attnkit.train(config, overrides=first, output_dir=tmp_path / "run", resume=True)
