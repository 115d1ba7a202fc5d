"""One training loop for every family: :class:`TrainingLoop` drives a :class:`FamilyAdapter`.

The loop owns what every family's training shares: epochs of batches (resumed from the batch a
signal stopped at), SIGINT/SIGTERM (``last`` saved after the current update, then
:class:`attnkit.errors.TrainingInterrupted`), the time budget, the update guard (an update whose
loss or gradient norm is NaN or inf is skipped, :mod:`attnkit.training.guard`), the learning
rate of each update, the training scalars of TensorBoard, dev evaluations (every
``eval_every`` updates or once an epoch), patience, and ``best``/``last`` after each evaluation.

A family brings the rest as an adapter: its batches, the forward and backward pass of one
update, its progress bar, its dev score (the adapter is given it as a callable, so
``training/`` imports nothing of ``evaluation/``), and how its checkpoints are written. A new
family is one more adapter.

Under DistributedDataParallel (seq2seq) the loop is given ``sync`` (every rank agrees on a
signal and on the clock), ``on_main`` (rank 0 alone evaluates and saves) and ``agree`` (every
rank takes rank 0's decision to stop).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import torch

from attnkit.training import rundir, schedules
from attnkit.training import tensorboard as tb
from attnkit.training.guard import UpdateGuard
from attnkit.training.state import TrainerState


@dataclass
class Update:
    """One update's figures, after its backward pass and before the optimizer step."""

    loss: Any  # the loss whose gradient is applied (a float or a 0-d tensor): the guard checks it
    reported: Any  # the loss per item to report (the same, or a family's readable part of it)
    correct: Any  # items predicted right (an int or a 0-d tensor)
    count: int  # items: target tokens, images


@dataclass
class LoopSettings:
    """What the loop reads of a run's ``train:`` settings."""

    epochs: int  # the epochs asked for (a time budget may plan fewer: ``state.planned_epochs``)
    eval_every: int = 0  # updates between dev evaluations (0: once an epoch)
    budget_s: float | None = None  # training wall time allowed, resumed runs included
    patience: int | None = None  # evaluations without improvement that end the run
    clip: float | None = None  # the global gradient norm's limit (0 or None: no clipping)
    max_bad_updates: int = 20  # skipped updates in a row that end the run

    @classmethod
    def of(cls, train) -> LoopSettings:
        """The settings of a family's ``train:`` section (a family without ``eval_every``
        evaluates once an epoch)."""
        return cls(
            epochs=train.epochs,
            eval_every=getattr(train, "eval_every", 0),
            budget_s=train.max_minutes * 60 if train.max_minutes else None,
            patience=train.patience,
            # a family that clips each weight apart (``clip_each``) does so in its step
            clip=None if getattr(train, "clip_each", False) else train.clip,
            max_bad_updates=train.max_bad_updates,
        )


class FamilyAdapter(Protocol):
    """What the loop asks of a family. ``state`` is the run's :class:`TrainerState`; its
    ``planned_epochs`` is how many epochs the loop runs."""

    #: what log lines call an update ("update", "step")
    unit: str
    #: True: an epoch is counted done before its dev evaluation (the evaluation belongs to the
    #: epochs completed; a budget spent mid-epoch ends the epoch there); False: an epoch's
    #: evaluation is counted in the epoch, as its last batch (``batches_done`` = all of them)
    counts_epoch_first: bool
    optimizer: torch.optim.Optimizer

    def parameters(self) -> Iterable[torch.Tensor]:
        """The parameters whose gradients the guard checks and clips."""

    def epoch_batches(self, state: TrainerState) -> Sequence:
        """Every batch of epoch ``state.epoch``, in training order (batches_done are skipped)."""

    def begin_epoch(self, state: TrainerState, n_batches: int) -> None:
        """Before the epoch's first batch (from ``state.batches_done``): a progress bar."""

    def rate(self, state: TrainerState, index: int, n_batches: int, elapsed: float) -> float | None:
        """The learning rate of the update on batch ``index`` of the epoch (None: the family's
        schedule sets it elsewhere)."""

    def step(self, batch, update: int) -> Update:
        """Gradients of one update, number ``update`` (forward and backward, no optimizer step)."""

    def counted(self, state: TrainerState, update: Update, applied: bool, index: int) -> None:
        """After an update is counted: the family's own figures and progress bar."""

    def end_epoch(self, state: TrainerState) -> None:
        """After the epoch's last update, or where a signal or the budget cut it."""

    def score(self, state: TrainerState, elapsed: Callable[[], float]) -> bool:
        """Score dev (the callable the adapter was given), count it into ``state``, log it;
        True when it is the best so far. ``elapsed()``: the run's training seconds."""

    def save(self, name: str, state: TrainerState, resumable: bool) -> None:
        """Write checkpoint ``name`` (``best``, ``last``); ``resumable``: with what --resume
        needs (the optimizer, the RNG, an interrupted epoch's order)."""

    def saved(self, state: TrainerState, reason: str) -> None:
        """After an evaluation's checkpoints; ``reason`` is why the run stops ("": it goes on)."""

    def where(self, state: TrainerState) -> str:
        """Where the run stands, for the line of an interrupted run."""


class TrainingLoop:
    """Epochs of updates with dev evaluations in between, until the planned epochs, patience
    or the time budget run out, or a signal stops them."""

    def __init__(
        self,
        adapter: FamilyAdapter,
        settings: LoopSettings,
        run_dir: Path,
        signals: rundir.StopSignals,
        board: tb.Board,
        log: Callable[[str], None],
        *,
        sync: Callable[[float], tuple[bool, float]] | None = None,
        on_main: Callable[..., Any] | None = None,
        agree: Callable[[bool], bool] | None = None,
    ):
        self.adapter, self.settings, self.run_dir = adapter, settings, run_dir
        self.signals, self.board, self.log = signals, board, log
        self._sync = sync or (lambda start: (signals.requested, time.time() - start))
        self._on_main = on_main or (lambda fn, default=None: fn())
        self._agree = agree or (lambda stop: stop)
        self._start = time.time()

    def elapsed(self) -> float:
        """Training seconds of the run, those of the runs it resumes included."""
        return time.time() - self._start

    def run(self, state: TrainerState) -> None:
        """Train from ``state`` on; returns when the run ends, raises TrainingInterrupted where a
        signal stops it (after ``last`` is saved)."""
        self._start = time.time() - state.elapsed_s
        guard = UpdateGuard(self.settings.max_bad_updates)  # skipped in a row, across epochs
        self.board.window.restart()
        stop = False
        while state.epoch < state.planned_epochs and not stop:
            if self._sync(self._start)[0]:  # between epochs
                self._interrupted(state)
            batches = self.adapter.epoch_batches(state)
            # resumed from an epoch's final checkpoint: its evaluation is done
            evaluated_already = state.batches_done >= len(batches)
            stop, cut = self._epoch(state, batches, guard)
            if stop:
                break
            counts_first = self.adapter.counts_epoch_first
            if counts_first:
                state.epoch, state.batches_done = state.epoch + 1, 0
            if counts_first or (not self.settings.eval_every and not evaluated_already):
                stop = self._evaluate(state, cut)
            if not counts_first:
                state.epoch, state.batches_done = state.epoch + 1, 0
        state.elapsed_s = self.elapsed()

    def _epoch(self, state: TrainerState, batches: Sequence, guard: UpdateGuard):
        """The updates of an epoch from ``state.batches_done``, each followed by an evaluation
        where one is due; (stop the run?, the budget cut the epoch?)."""
        adapter, settings = self.adapter, self.settings
        adapter.begin_epoch(state, len(batches))
        for index in range(state.batches_done, len(batches)):
            stop_now, elapsed = self._sync(self._start)
            if stop_now:
                adapter.end_epoch(state)
                self._interrupted(state)
            rate = adapter.rate(state, index, len(batches), elapsed)
            if rate is not None:
                schedules.set_rate(adapter.optimizer, rate)
            began = time.time()
            update = adapter.step(batches[index], state.step + 1)
            skipped = guard.step(
                adapter.optimizer, adapter.parameters(), update.loss, settings.clip, state.step + 1
            )
            state.train_s += time.time() - began
            self._count(state, update, guard, skipped is None)
            adapter.counted(state, update, skipped is None, index)
            out_of_time = self._out_of_time()
            if out_of_time and adapter.counts_epoch_first:
                adapter.end_epoch(state)
                return False, True  # the budget ends the epoch here; its evaluation follows
            due = settings.eval_every and state.step % settings.eval_every == 0
            if adapter.counts_epoch_first and index == len(batches) - 1:
                due = False  # the epoch's own evaluation follows at once, once it is counted
            if due or out_of_time:
                if self._evaluate(state, out_of_time):
                    adapter.end_epoch(state)
                    return True, out_of_time
        adapter.end_epoch(state)
        return False, False

    def _out_of_time(self) -> bool:
        budget = self.settings.budget_s
        return budget is not None and self._sync(self._start)[1] > budget

    def _count(self, state: TrainerState, update: Update, guard: UpdateGuard, applied: bool):
        """The counters of one update, applied or skipped, and its share of the training log."""
        state.step += 1
        state.batches_done += 1
        state.tokens += update.count
        if not applied:  # skipped: the weights are as they were
            state.skipped_updates += 1
            self.log(
                f"{self.adapter.unit} {state.step}: skipped, not finite ({guard.last_reason}); "
                f"{guard.in_a_row} in a row, {state.skipped_updates} in all"
            )
        else:
            self.board.window.add(update.reported * update.count, update.correct, update.count)
        if state.step % tb.EVERY == 0:
            self.board.train(state.step, self._lr(), state.skipped_updates)

    def _lr(self) -> float:
        return self.adapter.optimizer.param_groups[0]["lr"]

    def _evaluate(self, state: TrainerState, out_of_time: bool) -> bool:
        """Score dev, save ``best`` and ``last`` (in the main process); True: the run stops."""
        if self.board.window.pending:  # the updates since the last log, before the clock stops
            self.board.train(state.step, self._lr(), state.skipped_updates)
        try:
            stop = self._on_main(lambda: self._score_and_save(state, out_of_time), False)
        finally:
            self.board.window.restart()  # evaluating and saving are not training time
        return self._agree(stop)

    def _score_and_save(self, state: TrainerState, out_of_time: bool) -> bool:
        adapter = self.adapter
        improved = adapter.score(state, self.elapsed)
        reason = self._stop_reason(state, out_of_time)
        state.stopped = reason
        if improved:
            adapter.save("best", state, resumable=False)
        adapter.save("last", state, resumable=True)
        adapter.saved(state, reason)
        return bool(reason)

    def _stop_reason(self, state: TrainerState, out_of_time: bool) -> str:
        """Why the run ends after this evaluation: budget, patience, epochs, or "" (it goes on).
        The planned epochs are done only once counted (``counts_epoch_first``)."""
        patience = self.settings.patience
        budget = self.settings.budget_s
        if out_of_time or (budget is not None and self.elapsed() > budget):  # this process's clock
            return "budget"
        if patience is not None and state.bad_evals >= patience:
            return "patience"
        if self.adapter.counts_epoch_first and state.epoch >= state.planned_epochs:
            return "epochs" if state.epoch >= self.settings.epochs else "budget"
        return ""

    def _interrupted(self, state: TrainerState) -> None:
        """Save ``last`` where a signal stopped the run and raise TrainingInterrupted."""
        state.elapsed_s = self.elapsed()
        self._on_main(lambda: self.adapter.save("last", state, resumable=True))
        raise self.signals.interrupted(self.run_dir / "last", self.adapter.where(state))
