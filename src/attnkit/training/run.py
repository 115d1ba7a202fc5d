"""The one driver of a training run, the same for every family.

A family's ``train`` module parses its experiment and hands :func:`run` a :class:`Plan` (where
the run goes, its ``train:`` settings, what an update counts) and a ``start`` function that
builds the run's data, model, optimizer and adapter, or reads them back from ``OUT/last``. The
driver does the rest, in this order:

1. refuses ``torchrun`` for a family that trains in one process (``Plan.data_parallel``
   False), and joins the process group for one that does;
2. holds the run directory (:func:`attnkit.training.rundir.claim_run_dir`: a lock; a fresh
   run refuses one holding checkpoints unless ``overwrite``), SIGINT/SIGTERM, TensorBoard
   (``OUT/tensorboard``) and the run's own files (``OUT/train.log``, ``OUT/metrics.jsonl``:
   :mod:`attnkit.training.run_log`);
3. sets torch's threads, the device and the seed (``train.threads``, ``device``, ``seed``);
4. calls ``start(context)``, then runs the loop (:mod:`attnkit.training.loop`: the updates,
   the evaluations and their one log line, the progress bar, patience, ``best`` and ``last``);
5. calls the family's ``finish`` where the run reached its end (seq2seq: the final checkpoints
   and ``averaged``), and says the run's last line (:func:`attnkit.training.report.final_line`).

Every line goes to stderr (:mod:`attnkit.training.progress`) and to ``OUT/train.log``.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from attnkit.device import resolve_device
from attnkit.errors import ConfigError
from attnkit.training import distributed, report, rundir, schedules
from attnkit.training import tensorboard as tb
from attnkit.training.distributed import Distributed
from attnkit.training.loop import FamilyAdapter, LoopSettings, TrainingLoop
from attnkit.training.progress import Progress
from attnkit.training.run_log import RunLog
from attnkit.training.state import TrainerState


@dataclass
class TrainSettings:
    """The ``train:`` settings the driver and the loop read, with their defaults. Every family's
    ``train:`` section has these keys (and its own besides); a family with no config class of
    its own can use this one."""

    epochs: int = 10  # the most passes over the training data
    seed: int = 0  # torch's seed, set before ``start`` builds anything
    device: str = "auto"  # auto (CUDA when present), cpu, cuda, cuda:N
    threads: int | None = None  # torch's CPU threads (None or 0: torch's default)
    verbose: bool = True  # print the run's lines (train.log keeps them either way)
    progress: bool = True  # a progress bar on a terminal, one updating line in a notebook
    tensorboard: bool = False  # event files in OUT/tensorboard
    max_minutes: float | None = None  # the training time budget, resumed runs included
    patience: int | None = None  # evaluations without improvement that end the run
    clip: float | None = None  # the global gradient norm's limit
    max_bad_updates: int = 20  # non-finite updates in a row that end the run
    eval_every: int = 0  # updates between dev evaluations (0: once an epoch)


@dataclass
class Plan:
    """What the driver needs of a family's run before it starts."""

    out: Path  # the run directory: best/, last/, train.log, metrics.jsonl, tensorboard/
    train: Any  # the family's ``train:`` settings: :class:`TrainSettings`' keys at least
    items: str  # what an update's count counts: "tokens", "images", "nodes", ...
    resume: bool = False
    overwrite: bool = False
    source: str = "config"  # the experiment's file, for errors
    data_parallel: bool = False  # trains under torchrun (rank 0 logs, evaluates and saves)
    show_every: int = 1  # evaluations between logged lines (a better one is always logged)
    echo: Callable[[str], None] | None = None  # where lines go instead of stderr (tests)


@dataclass
class Context:
    """What ``start`` is given: the run as the driver set it up."""

    plan: Plan
    device: torch.device
    board: tb.Board
    log: RunLog  # call it with a line: printed and kept in train.log
    dist: Distributed | None  # the process group under torchrun, else None
    signals: rundir.StopSignals  # ``requested``: a signal asks the run to stop

    @property
    def is_main(self) -> bool:
        """True in the process that logs and writes the run directory (rank 0 under DDP)."""
        return self.dist is None or self.dist.is_main

    def on_main(self, fn, default=None):
        """``fn()`` in the main process; under DDP the others wait, and all stop if it fails."""
        return distributed.on_main(self.dist, fn, default)


@dataclass
class Started:
    """What ``start`` returns: the adapter and the counters to go on from."""

    adapter: FamilyAdapter
    state: TrainerState
    #: after the loop, where the run reached its end (not where a signal stopped it)
    finish: Callable[[TrainerState], None] | None = None
    close: Callable[[], None] | None = None  # always, at the end (threads the adapter holds)


def run(plan: Plan, start: Callable[[Context], Started | None]) -> Path:
    """Train the run ``plan`` describes with what ``start`` builds; ``OUT/best``.

    ``start`` returns None where there is nothing left to train (the run's epochs are done).
    """
    world = distributed.world_size()
    if world > 1 and not plan.data_parallel:  # N copies of one run would fight over its files
        raise ConfigError(
            f"{plan.source}: this experiment trains in one process; start it with attnkit "
            "train CONFIG, not torchrun"
        )
    train = plan.train
    progress = Progress(getattr(train, "verbose", True), getattr(train, "progress", True))
    echo = plan.echo or progress.line
    with ExitStack() as stack:
        dist = stack.enter_context(distributed.start(train.device)) if world > 1 else None
        main = dist is None or dist.is_main
        progress.show_bar = progress.show_bar and main
        on_main = lambda fn, default=None: distributed.on_main(dist, fn, default)  # noqa: E731
        claim = rundir.claim_run_dir(plan.out, plan.resume, plan.overwrite, echo)
        on_main(lambda: stack.enter_context(claim))  # rank 0 holds it, the others wait
        status = echo if plan.echo else progress.status
        notice = echo if plan.echo else progress.notice
        log = stack.enter_context(RunLog(plan.out, echo, main, plan.resume, status, notice))
        signals = stack.enter_context(rundir.StopSignals())
        board_on = bool(getattr(train, "tensorboard", False)) and main  # rank 0 logs for all
        board = stack.enter_context(tb.Board(plan.out / rundir.LOG_NAME, board_on, log, plan.items))
        if train.threads:
            torch.set_num_threads(train.threads)
        device = dist.device if dist is not None else resolve_device(train.device)
        torch.manual_seed(train.seed)
        context = Context(plan, device, board, log, dist, signals)
        started = start(context)
        if started is None:
            return plan.out / "best"
        if started.close is not None:
            stack.callback(started.close)
        state = started.state
        board.start(state.step)
        log.start(state, time.time() - state.elapsed_s, board)  # RUN/metrics.jsonl
        loop = _loop(plan, started.adapter, signals, board, log, progress, dist)
        loop.run(state)  # raises TrainingInterrupted where a signal stops it
        if started.finish is not None:
            started.finish(state)
        log(report.final_line(state, loop.metric, plan.out))
    return plan.out / "best"


def _loop(plan: Plan, adapter, signals, board, log, progress, dist) -> TrainingLoop:
    """The loop over ``adapter``; under DDP every rank agrees on signals and the clock, rank 0
    evaluates and saves, and every rank takes its decision to stop (and its plateau rate)."""
    settings = LoopSettings.of(plan.train, plan.show_every)
    if dist is None:
        return TrainingLoop(adapter, settings, plan.out, signals, board, log, progress=progress)

    def sync(start: float) -> tuple[bool, float]:
        signum, elapsed = dist.agree(signals.signum, time.time() - start)
        if signum is not None and signals.signum is None:
            signals.signum = signum  # another rank's signal: this one stops with it
        return signum is not None, elapsed

    def agree(stop: bool) -> bool:
        flag, lr = dist.from_main([float(stop), adapter.optimizer.param_groups[0]["lr"]])
        schedules.set_rate(adapter.optimizer, lr)
        return bool(flag)

    return TrainingLoop(
        adapter,
        settings,
        plan.out,
        signals,
        board,
        log,
        progress=progress,
        sync=sync,
        on_main=lambda fn, default=None: distributed.on_main(dist, fn, default),
        agree=agree,
    )
