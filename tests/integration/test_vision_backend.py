"""A vision run computes with the backend its config names: ``train.backend: reference`` trains and
evaluates the show-attend-tell reader with no C kernel, ``auto`` with the additive-score kernel on a
CPU that has it. Needs the MNIST copy (skipped, saying so, without it)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from attnkit.accel import native
from attnkit.families.vision.train import train_vision

REPO = Path(__file__).resolve().parents[2]


def _mnist_dir() -> Path:
    env = os.environ.get("ATTNKIT_DATA_DIR")
    return Path(env) / "mnist" if env else REPO.parent / "shared" / "data" / "mnist"


def _reader_config(backend: str) -> dict:
    return {
        "family": "vision",
        "data": {
            "task": "strips",
            "directory": str(_mnist_dir()),
            "max_digits": 2,
            "train_size": 32,
            "dev_size": 16,
            "test_size": 16,
            "resample": False,
            "verify": False,
        },
        "model": {
            "type": "show_attend_tell",
            "channels": [8],
            "embed": 8,
            "hidden": 16,
            "attention_dim": 8,
            "dropout": 0.0,
        },
        "train": {
            "epochs": 1,
            "batch_size": 16,
            "device": "cpu",
            "progress": False,
            "verbose": False,
            "tensorboard": False,
            "backend": backend,
        },
    }


@pytest.mark.parametrize("backend", ["reference", "auto"])
def test_vision_training_honours_the_backend(backend, tmp_path, monkeypatch):
    if not _mnist_dir().is_dir():
        pytest.skip(f"MNIST copy not found: {_mnist_dir()} is missing")
    if backend == "auto" and (why := native.unavailable()) is not None:
        pytest.skip(f"the C kernels are not available here: {why}")
    calls = []
    real = native.run_additive_energies
    monkeypatch.setattr(native, "run_additive_energies", lambda *a: calls.append(1) or real(*a))
    train_vision(_reader_config(backend), output_dir=tmp_path / "run")
    assert (len(calls) > 0) == (backend == "auto"), len(calls)
