"""A run's train.log and metrics.jsonl, and progress bars only on a terminal."""

from __future__ import annotations

import json
import re
import time

import pytest

from attnkit.errors import CheckpointError
from attnkit.training import tensorboard as tb
from attnkit.training.run_log import METRICS_NAME, TEXT_NAME, RunLog
from attnkit.training.state import TrainerState

STAMP = r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d "


def lines(path):
    return path.read_text(encoding="utf-8").splitlines()


def records(run_dir):
    return [json.loads(line) for line in lines(run_dir / METRICS_NAME)]


def run(run_dir, resume, position, updates, echo=None, main=True):
    """A run that logs one line, then a train record at each of ``updates`` and a dev record
    after the last; ``position`` holds step and epoch (mid-epoch: some batches done)."""
    printed = [] if echo is None else echo
    with (
        RunLog(run_dir, printed.append, main, resume) as log,
        tb.Board(run_dir / "tb", False, log, "tokens") as board,
    ):
        log(f"run from update {position.step}")
        log.start(position, time.time() - 5.0, board)
        for update in updates:
            position.step = update
            board.window.add(2.0 * update, update, 4)
            board.train(update, 1e-3 * update, 0)
        board.scalars(updates[-1], {"bleu": 12.5, "sentences": 30}, "dev")
    return printed


def test_every_line_is_printed_and_kept_with_its_time(tmp_path):
    printed = run(tmp_path, False, TrainerState(step=0, epoch=0, batches_done=1), [20, 40])
    assert printed == ["run from update 0"]
    (line,) = lines(tmp_path / TEXT_NAME)
    assert re.fullmatch(STAMP + "run from update 0", line)


def test_metrics_hold_train_and_dev_records(tmp_path):
    run(tmp_path, False, TrainerState(step=0, epoch=2, batches_done=1), [20, 40])
    first, second, dev = records(tmp_path)
    assert first["kind"] == "train" and (first["update"], first["epoch"]) == (20, 3)
    assert first["loss"] == pytest.approx(10.0) and first["accuracy"] == pytest.approx(5.0)
    assert first["lr"] == pytest.approx(0.02) and first["skipped_updates"] == 0
    assert first["tokens_per_s"] > 0 and 5.0 <= first["elapsed_s"] < 60
    assert second["update"] == 40 and second["lr"] == pytest.approx(0.04)
    # dev: its metrics (counts left out), with the rate of the updates before it
    assert dev == {**dev, "kind": "dev", "update": 40, "dev": {"bleu": 12.5}}
    assert dev["lr"] == pytest.approx(0.04) and dev["elapsed_s"] >= second["elapsed_s"]


def test_a_fresh_run_starts_both_files_afresh(tmp_path):
    run(tmp_path, False, TrainerState(step=0, epoch=0, batches_done=1), [20, 40])
    run(tmp_path, False, TrainerState(step=0, epoch=0, batches_done=1), [20])
    assert len(lines(tmp_path / TEXT_NAME)) == 1
    assert [(r["kind"], r["update"]) for r in records(tmp_path)] == [("train", 20), ("dev", 20)]


def test_a_resumed_run_appends_and_drops_what_came_after_its_checkpoint(tmp_path):
    run(tmp_path, False, TrainerState(step=0, epoch=0, batches_done=1), [20, 40, 60])
    with (tmp_path / METRICS_NAME).open("a", encoding="utf-8") as handle:
        handle.write('{"kind": "train", "upd')  # a line cut short when the run was killed
    run(
        tmp_path, True, TrainerState(step=40, epoch=1, batches_done=1), [60, 80]
    )  # resumed from update 40
    assert [line.split(" ", 2)[2] for line in lines(tmp_path / TEXT_NAME)] == [
        "run from update 0",
        "run from update 40",
    ]
    kept = [(r["kind"], r["update"], r["epoch"]) for r in records(tmp_path)]
    assert kept == [("train", 20, 1), ("train", 40, 1), ("train", 60, 2), ("train", 80, 2)] + [
        ("dev", 80, 2)
    ]


def test_other_ranks_neither_print_nor_write(tmp_path):
    printed = run(tmp_path, False, TrainerState(step=0, epoch=0, batches_done=1), [20], main=False)
    assert printed == [] and list(tmp_path.iterdir()) == []


def test_the_reason_a_run_stopped_is_kept(tmp_path):
    with pytest.raises(CheckpointError), RunLog(tmp_path, print, True, False):
        raise CheckpointError("runs/x: disk full\nmore detail")
    (line,) = lines(tmp_path / TEXT_NAME)
    assert re.fullmatch(STAMP + "stopped: CheckpointError: runs/x: disk full", line)


def test_a_file_that_cannot_be_written_is_said_once_and_training_goes_on(tmp_path, monkeypatch):
    printed = []
    with RunLog(tmp_path, printed.append, True, False) as log:
        broken = log._text

        def full(text):
            raise OSError(28, "No space left on device")

        monkeypatch.setattr(broken, "write", full)
        log("one")
        log("two")
    assert printed[0] == "one" and printed[2] == "two" and len(printed) == 3
    assert f"{tmp_path / TEXT_NAME}: cannot write (No space left on device)" in printed[1]


def test_an_unwritable_directory_is_said_and_the_run_goes_on(tmp_path):
    printed = []
    missing = tmp_path / "gone"
    with RunLog(missing, printed.append, True, False) as log:
        log("still printed")
    assert printed[-1] == "still printed"
    assert any(str(missing / TEXT_NAME) in p and "cannot write" in p for p in printed)
