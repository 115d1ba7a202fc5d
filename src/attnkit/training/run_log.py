"""A training run's own record in its run directory: ``train.log`` and ``metrics.jsonl``.

* ``RUN/train.log``: every line the trainer logs (what it prints), each after the local time
  (``2025-05-01 14:03:59``), and the one-line reason when a run stops on an error or a signal.
* ``RUN/metrics.jsonl``: one JSON object a line, for programs and plots:

  - ``{"kind": "train", "update", "epoch", "elapsed_s", "loss", "accuracy", "tokens_per_s",
    "lr", "skipped_updates"}`` every :data:`attnkit.training.tensorboard.EVERY` updates, and for
    the updates left before each dev evaluation (the means over those updates: what TensorBoard
    shows as ``train/*``);
  - ``{"kind": "dev", "update", "epoch", "elapsed_s", "lr", "dev": {metric: value}}`` after
    each dev evaluation (``lr``: the rate of the updates before it).

  ``epoch`` counts from 1 (the epoch in progress, or the one just counted before its
  evaluation);
  ``elapsed_s`` is the trainer's clock, the one ``train.max_minutes`` is measured by (setup left
  out; a resumed run counts on from its checkpoint).

A fresh run starts both files afresh; a resumed run appends to ``train.log`` and drops the lines
of ``metrics.jsonl`` that the stopped run wrote after the update it resumes from (as TensorBoard
does), so the file reads as one run. Under DDP only rank 0 prints and writes. A file that cannot
be written (a full disk) is said once and left: logging never costs a checkpoint.

What is printed, and where, is :mod:`attnkit.training.progress`'s.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import IO, Protocol

TEXT_NAME = "train.log"
METRICS_NAME = "metrics.jsonl"


class Position(Protocol):
    """Where a run is: the trainers' states have these."""

    step: int  # updates done
    epoch: int  # 0-based epoch in progress

    def epoch_number(self) -> int:
        """The 1-based epoch in progress, or just counted."""


class RunLog:
    """The log function of a run (call it with a line) that also keeps the run's files.

    ``echo`` prints each line, ``status_echo`` (default: ``echo``) each line given to
    :meth:`status` (a dev evaluation's: a notebook shows it on its progress line),
    ``notice_echo`` (default: ``echo``) each given to :meth:`notice` (what a resumed run changes:
    printed also without ``train.verbose``); ``main`` False
    (DDP ranks but 0) makes the log silent and writes nothing. Enter it once the run directory is
    held; :meth:`start` begins the metrics.
    """

    def __init__(
        self,
        run_dir: Path,
        echo: Callable[[str], None],
        main: bool,
        resume: bool,
        status_echo: Callable[[str], None] | None = None,
        notice_echo: Callable[[str], None] | None = None,
    ):
        self.run_dir = Path(run_dir)
        self.echo = echo
        self.status_echo = status_echo or echo
        self.notice_echo = notice_echo or echo
        self.main = main
        self.resume = resume
        self._text: IO[str] | None = None
        self._metrics: IO[str] | None = None
        self._position: Position | None = None
        self._started = time.time()
        self._lr: float | None = None  # of the latest train record: the rate before a dev one

    # ---- the text log ----------------------------------------------------------------------
    def __call__(self, message: str) -> None:
        if not self.main:
            return
        self.echo(message)
        self._stamped(message)

    def notice(self, message: str) -> None:
        """A line the user must see whatever ``train.verbose`` says (what a resumed run
        changes), kept like any other."""
        if not self.main:
            return
        self.notice_echo(message)
        self._stamped(message)

    def status(self, message: str) -> None:
        """A line that says where the run stands (a dev evaluation's): kept like any other,
        shown through ``status_echo``."""
        if not self.main:
            return
        self.status_echo(message)
        self._stamped(message)

    def __enter__(self) -> RunLog:
        if self.main:
            mode = "a" if self.resume else "w"
            self._text = self._open(TEXT_NAME, mode)
            if not self.resume:  # a fresh run's metrics start empty, not after an earlier run's
                self._metrics = self._open(METRICS_NAME, "w")
        return self

    def __exit__(self, kind, error, traceback) -> None:
        if error is not None:  # the CLI prints the reason; the log keeps it too
            reason = str(error).strip().splitlines()[:1]
            self._stamped(f"stopped: {': '.join([kind.__name__, *reason])}")
        for handle in (self._text, self._metrics):
            if handle is not None:
                handle.close()
        self._text = self._metrics = None

    # ---- the metrics -----------------------------------------------------------------------
    def start(self, position: Position, started: float, board) -> None:
        """Record metrics from ``position``'s update on: ``started`` is the trainer's clock
        (``time.time()`` at its zero), ``board`` (a :class:`attnkit.training.tensorboard.Board`)
        hands over every group of scalars it logs."""
        self._position, self._started = position, started
        if not self.main:
            return
        if self.resume:  # the stopped run's lines up to the checkpoint, then this run's
            try:
                _keep_until(self.run_dir / METRICS_NAME, position.step)
            except OSError as exc:
                self._give_up(METRICS_NAME, exc)
                return
            self._metrics = self._open(METRICS_NAME, "a")
        board.listen(self.record)

    def record(self, kind: str, update: int, values: dict) -> None:
        """One line of metrics.jsonl: ``kind`` ``train`` (``values`` hold loss, lr, ...) or
        ``dev`` (``values``: the dev metrics)."""
        if self._metrics is None or kind not in ("train", "dev"):
            return
        line = {
            "kind": kind,
            "update": update,
            "epoch": self._position.epoch_number() if self._position else None,
            "elapsed_s": round(time.time() - self._started, 3),
        }
        if kind == "train":
            self._lr = values.get("lr", self._lr)
            line.update(values)
        else:
            line.update(lr=self._lr, dev=dict(values))
        self._write("_metrics", json.dumps(line) + "\n")

    # ---- files -----------------------------------------------------------------------------
    def _open(self, name: str, mode: str) -> IO[str] | None:
        try:
            return open(self.run_dir / name, mode, encoding="utf-8", buffering=1)  # line-buffered
        except OSError as exc:
            self._give_up(name, exc)
            return None

    def _stamped(self, message: str) -> None:
        """``message`` after the local time, as a line of the text log."""
        self._write("_text", f"{time.strftime('%Y-%m-%d %H:%M:%S')} {message}\n")

    def _write(self, name: str, text: str) -> None:
        """``text`` to the file held in attribute ``name``, if open; given up on an OSError."""
        handle = getattr(self, name)
        if handle is None:
            return
        try:
            handle.write(text)
        except OSError as exc:
            setattr(self, name, None)
            self._give_up(Path(handle.name).name, exc)
            try:
                handle.close()
            except OSError:
                pass

    def _give_up(self, name: str, exc: OSError) -> None:
        self.echo(
            f"{self.run_dir / name}: cannot write ({exc.strerror or exc}); "
            "training goes on without it"
        )


def _keep_until(path: Path, step: int) -> None:
    """Drop the lines of ``path`` after update ``step`` (and any line that is not a record)."""
    try:
        lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
    except FileNotFoundError:
        return
    kept = []
    for line in lines:
        try:
            update = json.loads(line).get("update")
        except (ValueError, AttributeError):
            continue  # a line cut short by the stop
        if isinstance(update, int) and update <= step:
            kept.append(line + "\n")
    part = path.with_name(path.name + ".part")
    part.write_text("".join(kept), encoding="utf-8")
    os.replace(part, path)
