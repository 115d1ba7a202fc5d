"""A training killed with SIGKILL at a random moment and resumed ends with the weights of a run
that was never interrupted, bit for bit (same seed, one thread)."""

import json
import os
import random
import signal
import subprocess
import sys
import time

import pytest
import torch
from safetensors.torch import load_file
from test_learning import _reversal_data, _write_config

pytestmark = pytest.mark.slow

MODEL = {
    "embedding_dim": 8,
    "encoder_hidden": 8,
    "decoder_hidden": 16,
    "attention_dim": 8,
    "dropout": 0.2,
}  # dropout on: the resumed run must continue the random stream too
TRAIN = {
    "epochs": 3,
    "batch_size": 20,
    "eval_every": 7,
    "patience": 100,
    "scheduler": "plateau",
    "lr_patience": 1,
    "lr": 0.01,
}


def _env():
    return dict(os.environ, OMP_NUM_THREADS="1", PYTHONUNBUFFERED="1")


def _train(config, *extra):
    return subprocess.run(
        [sys.executable, "-m", "attnkit", "train", str(config), *extra],
        env=_env(),
        capture_output=True,
        text=True,
        timeout=600,
    )


def _step(run):
    try:
        return json.loads((run / "last" / "trainer.json").read_text())["state"]["step"]
    except (OSError, ValueError, KeyError):
        return None


def test_sigkill_then_resume_equals_an_uninterrupted_run(tmp_path):
    data = _reversal_data(tmp_path, 1000, n_dev=40, n_test=10)  # 50 updates per epoch, 150 in all
    straight = _write_config(tmp_path / "a.yaml", data, tmp_path / "a", MODEL, TRAIN)
    done = _train(straight)
    assert done.returncode == 0, done.stderr
    final_step = _step(tmp_path / "a")
    assert final_step == 150

    killed_run = tmp_path / "b"
    killed = _write_config(tmp_path / "b.yaml", data, killed_run, MODEL, TRAIN)
    delay = random.uniform(0.0, 0.4)
    proc = subprocess.Popen(
        [sys.executable, "-m", "attnkit", "train", str(killed)],
        env=_env(),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.time() + 300
        while _step(killed_run) is None and proc.poll() is None and time.time() < deadline:
            time.sleep(0.005)  # until the first checkpoint
        time.sleep(delay)
        proc.send_signal(signal.SIGKILL)
    finally:
        proc.wait()
    assert proc.returncode == -signal.SIGKILL, f"the run ended before the kill ({delay:.3f} s)"
    stopped_at = _step(killed_run)
    assert stopped_at is not None and stopped_at < final_step, (stopped_at, delay)

    resumed = _train(killed, "--resume")
    assert resumed.returncode == 0, resumed.stderr
    assert _step(killed_run) == final_step
    a = load_file(str(tmp_path / "a" / "last" / "model.safetensors"))
    b = load_file(str(killed_run / "last" / "model.safetensors"))
    assert a.keys() == b.keys()
    differ = [name for name in a if not torch.equal(a[name], b[name])]
    assert not differ, (
        f"killed at update >= {stopped_at} ({delay:.3f} s after the first checkpoint): {differ}"
    )
