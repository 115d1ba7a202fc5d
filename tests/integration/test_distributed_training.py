"""DDP under torchrun: 2 gloo ranks on the CPU make the updates of 1 process with the same global
batch, stop together on a SIGTERM with rank 0 saving, and resume from rank 0's checkpoint."""

import json
import os
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
    "dropout": 0.0,
}  # dropout draws differ between ranks; without it the runs must agree
# 30 global batches an epoch; the plateau schedule halves the rate on the way (rank 0 decides)
TRAIN = {
    "epochs": 2,
    "batch_size": 20,
    "eval_every": 7,
    "patience": 100,
    "lr": 0.01,
    "scheduler": "plateau",
    "lr_patience": 0,
}


def _env():
    return dict(os.environ, OMP_NUM_THREADS="1", PYTHONUNBUFFERED="1")


def _command(config, ranks, *extra):
    if ranks == 1:
        return [sys.executable, "-m", "attnkit", "train", str(config), *extra]
    # --standalone: a free local port, so runs side by side do not meet
    return [
        sys.executable,
        "-m",
        "torch.distributed.run",
        "--standalone",
        "--nproc_per_node",
        str(ranks),
        "-m",
        "attnkit",
        "train",
        str(config),
        *extra,
    ]


def _train(config, ranks, *extra):
    return subprocess.run(
        _command(config, ranks, *extra), env=_env(), capture_output=True, text=True, timeout=600
    )


def _state(run):
    return json.loads((run / "last" / "trainer.json").read_text())["state"]


def _assert_same_training(run, reference):
    one, two = _state(reference), _state(run)
    assert two["step"] == one["step"] == 60 and two["tokens"] == one["tokens"]
    assert [h["lr"] for h in two["history"]] == [h["lr"] for h in one["history"]]
    assert len({h["lr"] for h in one["history"]}) > 1  # the plateau schedule acted
    a, b = (load_file(r / "last" / "model.safetensors") for r in (reference, run))
    assert a.keys() == b.keys()
    for name in a:
        torch.testing.assert_close(b[name], a[name], rtol=1e-4, atol=1e-5, msg=name)


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    """Data, and a run of one process over it."""
    tmp = tmp_path_factory.mktemp("ddp")
    data = _reversal_data(tmp, 600, n_dev=20, n_test=10)
    config = _write_config(tmp / "one.yaml", data, tmp / "one", MODEL, TRAIN)
    done = _train(config, 1)
    assert done.returncode == 0, done.stderr
    return tmp, data


def test_two_gloo_ranks_train_like_one_process(reference, tmp_path):
    tmp, data = reference
    config = _write_config(tmp_path / "two.yaml", data, tmp_path / "two", MODEL, TRAIN)
    done = _train(config, 2)
    assert done.returncode == 0, done.stderr
    assert "DistributedDataParallel: 2 processes (gloo)" in done.stderr
    assert done.stdout.count("best checkpoint:") == 1  # rank 0 speaks for the run
    evaluations = 60 // 7 + 1  # every 7 updates, and at the run's end (update 60)
    assert done.stderr.count("): dev exact_match ") == evaluations  # rank 0 alone evaluates
    # rank 0 alone writes the run's log and metrics
    assert (tmp_path / "two" / "train.log").read_text().count("): dev exact_match ") == evaluations
    kinds = [json.loads(line)["kind"] for line in (tmp_path / "two" / "metrics.jsonl").open()]
    assert kinds.count("dev") == evaluations
    _assert_same_training(tmp_path / "two", tmp / "one")


def test_sigterm_stops_both_ranks_at_one_update_and_resume_goes_on(reference, tmp_path):
    tmp, data = reference
    run = tmp_path / "two"
    config = _write_config(tmp_path / "two.yaml", data, run, MODEL, TRAIN)
    proc = subprocess.Popen(
        _command(config, 2), env=_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    try:
        deadline = time.time() + 300
        while not (run / "last" / "trainer.json").exists() and proc.poll() is None:
            assert time.time() < deadline
            time.sleep(0.01)
        proc.send_signal(signal.SIGTERM)  # torchrun passes it on to both ranks
        _, err = proc.communicate(timeout=300)
    finally:
        proc.kill()
    stopped = _state(run)
    assert 0 < stopped["step"] < 60 and not stopped["finished"]
    lines = [line for line in err.splitlines() if line.startswith("attnkit: interrupted: SIGTERM")]
    assert len(lines) == 2 and all(f"at update {stopped['step']} " in line for line in lines), err

    resumed = _train(config, 2, "--resume")
    assert resumed.returncode == 0, resumed.stderr
    _assert_same_training(run, tmp / "one")
