"""End to end: a run directory survives signals, a second trainer, an earlier run, a read-only
directory and a full disk, each reported in one line."""

import io
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch
import yaml
from safetensors import SafetensorError
from test_learning import TINY_MODEL, _reversal_data

import attnkit
from attnkit import checkpoint as ckpt
from attnkit.cli import main
from attnkit.errors import TrainingInterrupted
from attnkit.families.seq2seq.config import load_experiment
from attnkit.families.seq2seq.evaluate import evaluate_translator
from attnkit.families.seq2seq.trainer import Trainer
from attnkit.families.seq2seq.translator import Translator
from attnkit.training import rundir

pytestmark = pytest.mark.slow

MNIST = (
    Path(
        os.environ.get("ATTNKIT_DATA_DIR", Path(__file__).resolve().parents[3] / "shared" / "data")
    )
    / "mnist"
)


def _config(path, run_dir, train):
    cfg = {
        "name": "test",
        "output_dir": str(run_dir),
        "data": _reversal_data(
            path.parent, 100, n_dev=20, n_test=10
        ),  # batch 20: 5 updates an epoch
        "model": TINY_MODEL,
        "train": {
            "threads": 1,
            "progress": False,
            "seed": 1,
            "batch_size": 20,
            "patience": 100,
            "lr": 0.01,
            **train,
        },
        "decode": {"max_len_cap": 10},
    }
    path.write_text(yaml.safe_dump(cfg), encoding="utf-8")
    return path


def _state(directory):
    return json.loads((directory / "trainer.json").read_text())["state"]


def _one_line(capsys) -> str:
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1, err
    return err[0]


def _error_line(capsys) -> str:
    """The last line of stderr, once a run's own lines are printed: the error's one line."""
    err = capsys.readouterr().err.strip().splitlines()
    assert not any("Traceback" in line for line in err), err
    return err[-1]


def _signal_after_updates(monkeypatch, updates: int, sig: int) -> None:
    """Send ``sig`` to this process during the ``updates``-th optimizer step."""
    real, count = torch.optim.Adam.step, [0]

    def step(self, *args, **kwargs):
        count[0] += 1
        if count[0] == updates:
            os.kill(os.getpid(), sig)
        return real(self, *args, **kwargs)

    monkeypatch.setattr(torch.optim.Adam, "step", step)


# ---- signals --------------------------------------------------------------------------------


def test_sigterm_saves_last_and_exits_with_one_line(tmp_path):
    """A real ``python -m attnkit train`` under SIGTERM after its first checkpoint: exit 143, one
    line, and a ``last`` at a later update that --resume goes on from."""
    run = tmp_path / "run"
    cfg = _config(tmp_path / "exp.yaml", run, {"epochs": 10_000, "eval_every": 5})
    env = dict(os.environ, PYTHONPATH=str(Path(attnkit.__file__).parents[1]), OMP_NUM_THREADS="1")
    proc = subprocess.Popen(
        [sys.executable, "-m", "attnkit", "train", str(cfg)],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.time() + 120
        while not (run / "last" / "meta.json").is_file() or _state(run / "last")["step"] < 10:
            assert proc.poll() is None and time.time() < deadline, "no second checkpoint"
            time.sleep(0.05)
        first = _state(run / "last")["step"]
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=60)
    finally:
        proc.kill()
    state = _state(run / "last")
    assert proc.returncode == 143
    batch = f", batch {state['batches_done']}" if state["batches_done"] else ""
    assert err.strip().splitlines()[-1] == (  # the run's lines, then the one line of the stop
        f"attnkit: interrupted: SIGTERM: saved {run / 'last'} at update "
        f"{state['step']} (epoch {state['epoch'] + 1}{batch}); continue with --resume"
    )
    assert state["step"] >= first >= 10 and not state["finished"]
    Translator.load(run / "last", "cpu")
    assert not list(run.glob(".last.*")) and not list(run.glob(".best.*"))
    assert main(["train", str(cfg), "--resume", "--set", f"train.epochs={state['epoch'] + 1}"]) == 0
    assert _state(run / "last")["step"] > state["step"]


@pytest.mark.parametrize("updates", [7, 5], ids=["mid-epoch", "epoch-end"])
def test_ctrl_c_saves_last_and_resume_equals_a_straight_run(tmp_path, monkeypatch, capsys, updates):
    """SIGINT during update 7 (epoch 2) or 5 (the end of epoch 1, whose evaluation still runs):
    exit 130, and the resumed run ends with the weights and history of an uninterrupted one."""
    train = {"epochs": 3, "scheduler": "noam", "warmup_steps": 4}
    straight = _config(tmp_path / "a.yaml", tmp_path / "a", train)
    assert main(["train", str(straight)]) == 0

    cut = _config(tmp_path / "b.yaml", tmp_path / "b", train)
    _signal_after_updates(monkeypatch, updates, signal.SIGINT)
    assert main(["train", str(cut)]) == 130
    monkeypatch.undo()
    stopped = _state(tmp_path / "b" / "last")
    assert stopped["step"] == updates and not stopped["finished"]
    assert (stopped["epoch"], stopped["batches_done"]) == ((1, 2) if updates == 7 else (1, 0))
    assert (
        capsys.readouterr()
        .err.strip()
        .endswith(
            f"attnkit: interrupted: SIGINT: saved {tmp_path / 'b' / 'last'} at update {updates} "
            f"(epoch 2{', batch 2' if updates == 7 else ''}); continue with --resume"
        )
    )

    assert main(["train", str(cut), "--resume"]) == 0
    a, b = _state(tmp_path / "a" / "last"), _state(tmp_path / "b" / "last")
    assert b["step"] == a["step"] == 15 and b["finished"]
    assert [(h["step"], h["lr"], h["dev"]) for h in b["history"]] == [
        (h["step"], h["lr"], h["dev"]) for h in a["history"]
    ]
    wa = ckpt.read_tensors(tmp_path / "a" / "last" / "model.safetensors")
    wb = ckpt.read_tensors(tmp_path / "b" / "last" / "model.safetensors")
    for name in wa:
        torch.testing.assert_close(wb[name], wa[name], msg=name)


@pytest.mark.skipif(not MNIST.is_dir(), reason=f"MNIST copy not found: {MNIST} is missing")
def test_vision_sigterm_mid_epoch_then_resume_equals_a_straight_run(tmp_path, monkeypatch):
    from attnkit.families.vision.train import train_vision

    config = {
        "family": "vision",
        "data": {
            "task": "mnist",
            "directory": str(MNIST),
            "train_size": 96,
            "dev_size": 32,
            "test_size": 32,
            "verify": False,
        },
        "model": {
            "type": "ram",
            "glimpses": 2,
            "hidden": 16,
            "glimpse_hidden": 16,
            "location_hidden": 8,
            "core": "rnn",
            "mc_samples": 1,
        },
        "train": {
            "epochs": 2,
            "batch_size": 32,
            "lr": 3e-3,
            "device": "cpu",
            "progress": False,
            "verbose": False,
        },
    }
    train_vision(config, output_dir=tmp_path / "a")
    _signal_after_updates(monkeypatch, 4, signal.SIGTERM)  # epoch 2, its first batch done
    with pytest.raises(TrainingInterrupted) as err:
        train_vision(config, output_dir=tmp_path / "b")
    monkeypatch.undo()
    assert err.value.exit_status == 143
    stopped = ckpt.read_json(tmp_path / "b" / "last" / "trainer.json")["state"]
    assert (stopped["step"], stopped["epoch"], stopped["batches_done"]) == (4, 1, 1)
    train_vision(config, output_dir=tmp_path / "b", resume=True)
    wa = ckpt.read_tensors(tmp_path / "a" / "last" / "model.safetensors")
    wb = ckpt.read_tensors(tmp_path / "b" / "last" / "model.safetensors")
    for name in wa:
        torch.testing.assert_close(wb[name], wa[name], msg=name)
    b = ckpt.read_json(tmp_path / "b" / "last" / "trainer.json")["state"]
    assert (b["step"], b["epoch"], b["batches_done"]) == (6, 2, 0)


# ---- one line each, before any training --------------------------------------------------


def test_a_second_trainer_on_a_run_directory_is_refused(tmp_path, capsys):
    cfg = _config(tmp_path / "exp.yaml", tmp_path / "run", {"epochs": 1})
    with rundir.claim_run_dir(tmp_path / "run", resume=False, overwrite=False, log=print):
        assert main(["train", str(cfg)]) == 2
    assert _one_line(capsys) == (
        f"attnkit: error: {tmp_path / 'run'}: another training run (pid {os.getpid()}) "
        "is using this directory; wait for it to end or choose another output directory"
    )


def test_a_fresh_run_over_checkpoints_needs_overwrite(tmp_path, capsys):
    cfg = _config(tmp_path / "exp.yaml", tmp_path / "run", {"epochs": 1})
    assert main(["train", str(cfg)]) == 0
    before = (tmp_path / "run" / "last" / "model.safetensors").read_bytes()
    capsys.readouterr()
    assert main(["train", str(cfg), "--set", "train.lr=0.02"]) == 2
    assert (
        "holds checkpoints of an earlier run (last, best); continue it with --resume, "
        "replace it with "
        "--overwrite" in _one_line(capsys)
    )
    assert (tmp_path / "run" / "last" / "model.safetensors").read_bytes() == before
    assert main(["train", str(cfg), "--set", "train.lr=0.02", "--overwrite"]) == 0
    assert (tmp_path / "run" / "last" / "model.safetensors").read_bytes() != before


def test_a_read_only_run_directory_fails_before_training(tmp_path, monkeypatch, capsys):
    run = tmp_path / "run"
    run.mkdir()
    cfg = _config(tmp_path / "exp.yaml", run, {"epochs": 1})
    monkeypatch.setattr(
        "attnkit.families.seq2seq.trainer.starting_point",
        lambda *a: pytest.fail("training started"),
    )
    if os.geteuid() == 0:  # root bypasses permissions: fail the probe as a read-only mount would

        def read_only(*args, **kwargs):
            raise OSError(30, "Read-only file system")

        monkeypatch.setattr(rundir.tempfile, "mkstemp", read_only)
    else:
        run.chmod(0o555)
    try:
        assert main(["train", str(cfg)]) == 2
    finally:
        run.chmod(0o755)
    line = _one_line(capsys)
    assert line.startswith(f"attnkit: error: {run}: cannot write checkpoints there (")


def test_a_full_disk_at_a_save_keeps_the_previous_checkpoint(tmp_path, monkeypatch, capsys):
    """The 5th safetensors write (the second evaluation's first checkpoint) finds the disk full."""
    cfg = _config(tmp_path / "exp.yaml", tmp_path / "run", {"epochs": 2, "eval_every": 2})
    real, count = ckpt.save_file, [0]

    def save_file(*args, **kwargs):
        count[0] += 1
        if count[0] >= 5:
            raise SafetensorError(
                "Error while serializing: IoError(No space left on device (os error 28))"
            )
        return real(*args, **kwargs)

    monkeypatch.setattr(ckpt, "save_file", save_file)
    assert main(["train", str(cfg)]) == 2
    line = _error_line(capsys)
    assert (
        line.startswith(f"attnkit: error: {tmp_path / 'run'}/")
        and "No space left on device" in line
    )
    assert line.endswith("(the previous one is kept)")
    monkeypatch.undo()
    assert _state(tmp_path / "run" / "last")["step"] == 2
    Translator.load(tmp_path / "run" / "last", "cpu")
    assert sorted(p.name for p in (tmp_path / "run").iterdir() if p.name.startswith(".")) == [
        rundir.LOCK_NAME
    ]


# ---- the run's own log ------------------------------------------------------------------------


def _records(run):
    return [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]


def test_a_run_keeps_its_log_and_metrics_and_a_resumed_one_adds_to_them(tmp_path, capsys):
    """train.log holds what was printed; metrics.jsonl a train and a dev record per evaluation
    (5 updates an epoch, fewer than tensorboard.EVERY); with stderr no terminal, no bar."""
    run = tmp_path / "run"
    cfg = _config(tmp_path / "exp.yaml", run, {"epochs": 2, "progress": True})
    assert main(["train", str(cfg)]) == 0
    out, err = capsys.readouterr()
    logged = [line.split(" ", 2)[2] for line in (run / "train.log").read_text().splitlines()]
    # every line the run printed (stderr); stdout has the CLI's closing "best checkpoint: ..."
    assert logged == err.strip().splitlines() and len(logged) >= 4
    assert out.strip().splitlines() == [f"best checkpoint: {run / 'best'}"]
    assert "\r" not in err and "batch/s" not in err  # no progress bar in a file or pipe
    first = _records(run)
    assert [(r["kind"], r["update"], r["epoch"]) for r in first] == [
        ("train", 5, 1),
        ("dev", 5, 1),
        ("train", 10, 2),
        ("dev", 10, 2),
    ]
    metric = json.loads((run / "best" / "trainer.json").read_text())["metric"]
    for record in first:
        assert record["elapsed_s"] > 0 and record["lr"] == pytest.approx(0.01)
        if record["kind"] == "train":
            assert record["loss"] > 0 and record["tokens_per_s"] > 0
        else:
            assert metric in record["dev"]
    assert first[3]["elapsed_s"] > first[0]["elapsed_s"]

    assert main(["train", str(cfg), "--resume", "--set", "train.epochs=3"]) == 0
    err = capsys.readouterr().err.strip().splitlines()
    again = [line.split(" ", 2)[2] for line in (run / "train.log").read_text().splitlines()]
    assert again == logged + err
    after = _records(run)
    assert after[:4] == first
    assert [(r["kind"], r["update"], r["epoch"]) for r in after[4:]] == [
        ("train", 15, 3),
        ("dev", 15, 3),
    ]
    assert after[4]["elapsed_s"] > first[3]["elapsed_s"]  # the clock goes on from the checkpoint


def test_on_a_terminal_the_bar_is_drawn(tmp_path, monkeypatch):
    class Terminal(io.StringIO):
        def isatty(self):
            return True

    terminal = Terminal()
    monkeypatch.setattr(sys, "stderr", terminal)
    path = _config(tmp_path / "exp.yaml", tmp_path / "run", {"epochs": 1, "progress": True})
    Trainer(
        load_experiment(path), log_fn=lambda message: None, dev_scorer=evaluate_translator
    ).train()
    assert "epoch 1/1" in terminal.getvalue() and "loss=" in terminal.getvalue()
