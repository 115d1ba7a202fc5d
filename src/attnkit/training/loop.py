"""One training loop for every family: :class:`TrainingLoop` drives a :class:`FamilyAdapter`.

The loop owns what every family's training shares: epochs of batches (resumed from the batch a
signal stopped at), SIGINT/SIGTERM (``last`` saved after the current update, then
:class:`attnkit.errors.TrainingInterrupted`), the time budget, the update guard (an update whose
loss or gradient norm is NaN or inf is skipped, :mod:`attnkit.training.guard`), the learning
rate of each update, the progress bar, the training scalars of TensorBoard, dev evaluations
(every ``eval_every`` updates and at the last planned epoch's end, or once an epoch: an epoch
is counted once its last batch is trained, before the evaluation that follows; where the time
budget runs out, at once, the epoch left to go on in a resumed run) with their one log line
(:mod:`attnkit.training.report`), their TensorBoard scalars and pictures and their entry in the
history, patience, and ``best``/``last`` after each evaluation.

A family brings the rest as an adapter: its batches, the forward and backward pass of one
update, its dev score (:class:`~attnkit.training.report.DevScore`; the adapter is given its
scorer as a callable, so ``training/`` imports nothing of ``evaluation/``), and how its
checkpoints are written. The driver (:mod:`attnkit.training.run`) sets a run up around it.

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

from attnkit.training import report, rundir, schedules
from attnkit.training import tensorboard as tb
from attnkit.training.guard import UpdateGuard
from attnkit.training.progress import Progress
from attnkit.training.report import DevScore
from attnkit.training.state import TrainerState

POSTFIX_EVERY = 20  # updates between the progress bar's figures (each reads the device)


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
    show_every: int = 1  # evaluations between logged ones (a better one is always logged)

    @classmethod
    def of(cls, train, show_every: int = 1) -> LoopSettings:
        """The settings of a family's ``train:`` section (a family without ``eval_every``
        evaluates once an epoch)."""
        return cls(
            show_every=show_every,
            epochs=train.epochs,
            eval_every=getattr(train, "eval_every", 0),
            budget_s=train.max_minutes * 60 if train.max_minutes else None,
            patience=train.patience,
            # a family that clips each weight apart (``clip_each``) does so in its step
            clip=None if getattr(train, "clip_each", False) else train.clip,
            max_bad_updates=train.max_bad_updates,
        )


class FamilyAdapter(Protocol):
    """What the loop asks of a family: its batches, one update, a dev evaluation and its
    checkpoints. ``state`` is the run's :class:`TrainerState`; its ``planned_epochs`` is how
    many epochs the loop runs. The loop does the rest: counting, the log line, the progress
    bar, TensorBoard, patience, ``best`` and ``last``."""

    #: what an update's ``count`` counts ("tokens", "images", ...): the log's items per second
    items: str
    optimizer: torch.optim.Optimizer

    def parameters(self) -> Iterable[torch.Tensor]:
        """The parameters whose gradients the guard checks and clips."""

    def epoch_batches(self, state: TrainerState) -> Sequence:
        """Every batch of epoch ``state.epoch``, in training order (batches_done are skipped)."""

    def rate(self, state: TrainerState, index: int, n_batches: int, elapsed: float) -> float | None:
        """The learning rate of the update on batch ``index`` of the epoch (None: the family's
        schedule sets it elsewhere)."""

    def step(self, batch, update: int) -> Update:
        """Gradients of one update, number ``update`` (the model in training mode; forward and
        backward, no optimizer step)."""

    def evaluate(self, state: TrainerState) -> DevScore:
        """Score dev with the weights as they are (the adapter was given its scorer)."""

    def save(self, name: str, state: TrainerState, resumable: bool) -> None:
        """Write checkpoint ``name`` (``best``, ``last``); ``resumable``: with what --resume
        needs (the optimizer, the RNG, an interrupted epoch's order)."""

    def saved(self, state: TrainerState, reason: str) -> None:
        """After an evaluation's checkpoints; ``reason`` is why the run stops ("": it goes on)."""


class TrainingLoop:
    """Epochs of updates with dev evaluations in between, until the planned epochs, patience
    or the time budget run out, or a signal stops them.

    ``log`` takes every line of the run (a :class:`attnkit.training.run_log.RunLog`, or any
    callable); an evaluation's line goes to ``log.status`` where it has one (in a notebook the
    progress line shows it). ``progress`` draws the epochs' bar.
    """

    def __init__(
        self,
        adapter: FamilyAdapter,
        settings: LoopSettings,
        run_dir: Path,
        signals: rundir.StopSignals,
        board: tb.Board,
        log: Callable[[str], None],
        *,
        progress: Progress | None = None,
        sync: Callable[[float], tuple[bool, float]] | None = None,
        on_main: Callable[..., Any] | None = None,
        agree: Callable[[bool], bool] | None = None,
    ):
        self.adapter, self.settings, self.run_dir = adapter, settings, run_dir
        self.signals, self.board, self.log = signals, board, log
        self.status = getattr(log, "status", log)
        self.progress = progress or Progress(verbose=False)
        self._sync = sync or (lambda start: (signals.requested, time.time() - start))
        self._on_main = on_main or (lambda fn, default=None: fn())
        self._agree = agree or (lambda stop: stop)
        self._start = time.time()
        self.since_evaluation = tb.Window(adapter.items)  # the training figures of the line
        self.skipped_before = 0  # skipped updates before the window
        self.evaluations = 0  # in this process
        self.metric: str | None = None  # the deciding dev figure (once one is scored)

    def elapsed(self) -> float:
        """Training seconds of the run, those of the runs it resumes included."""
        return time.time() - self._start

    def run(self, state: TrainerState) -> None:
        """Train from ``state`` on; returns when the run ends, raises TrainingInterrupted where a
        signal stops it (after ``last`` is saved)."""
        self._start = time.time() - state.elapsed_s
        guard = UpdateGuard(self.settings.max_bad_updates)  # skipped in a row, across epochs
        self.board.window.restart()
        self.since_evaluation.restart()
        self.skipped_before = state.skipped_updates
        stop = False
        try:
            while state.epoch < state.planned_epochs and not stop:
                if self._sync(self._start)[0]:  # between epochs
                    self._interrupted(state)
                batches = self.adapter.epoch_batches(state)
                if state.batches_done >= len(batches):
                    # a checkpoint of an older attnkit, written at an epoch's end before it was
                    # counted: its batches and its evaluation are done
                    state.epoch, state.batches_done = state.epoch + 1, 0
                    continue
                stop = self._epoch(state, batches, guard)
        finally:
            self.progress.end()
        state.elapsed_s = self.elapsed()

    def _epoch(self, state: TrainerState, batches: Sequence, guard: UpdateGuard) -> bool:
        """The updates of an epoch from ``state.batches_done``, each followed by an evaluation
        where one is due; the epoch is counted once its last batch is trained, before the
        evaluation that follows it. True: the run stops."""
        adapter, settings = self.adapter, self.settings
        self.progress.begin(state.epoch + 1, state.planned_epochs, len(batches), state.batches_done)
        for index in range(state.batches_done, len(batches)):
            stop_now, elapsed = self._sync(self._start)
            if stop_now:
                self._interrupted(state)
            rate = adapter.rate(state, index, len(batches), elapsed)
            if rate is not None:
                schedules.set_rate(adapter.optimizer, rate)
            began = time.time()
            update = adapter.step(batches[index], state.step + 1)
            skipped = guard.step(
                adapter.optimizer,
                adapter.parameters(),
                update.loss,
                settings.clip,
                state.step + 1,
                getattr(adapter, "scaler", None),  # fp16's loss scaler (attnkit.training.precision)
            )
            state.train_s += time.time() - began
            self._count(state, update, guard, skipped is None)
            last = index == len(batches) - 1
            figures = self.progress.show_bar and (index % POSTFIX_EVERY == 0 or last)
            self.progress.advance(self._postfix() if figures else None)  # no device read unshown
            if last:  # the epoch is done: its evaluation belongs to the epochs completed
                state.epoch, state.batches_done = state.epoch + 1, 0
            out_of_time = self._out_of_time()  # mid-epoch: evaluated there, the epoch goes on
            if settings.eval_every:  # and at the run's end, so that every run has a best
                due = state.step % settings.eval_every == 0
                due = due or (last and state.epoch >= state.planned_epochs)
            else:
                due = last  # once an epoch, at its end
            if (due or out_of_time) and self._evaluate(state, out_of_time):
                return True
        return False

    def _postfix(self) -> dict[str, str]:
        """The bar's figures: the loss and accuracy of the updates since the last evaluation,
        their items per second, the rate."""
        window = self.since_evaluation
        if not window.count:
            return {"lr": f"{self._lr():.1e}"}
        seconds = max(time.perf_counter() - window.started, 1e-9)
        return {
            "loss": f"{float(window.loss_sum) / window.count:.4f}",
            "acc": f"{100 * float(window.correct) / window.count:.1f}%",
            f"{self.adapter.items}/s": f"{window.count / seconds:,.0f}",
            "lr": f"{self._lr():.1e}",
        }

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
                f"update {state.step}: skipped, not finite ({guard.last_reason}); "
                f"{guard.in_a_row} in a row, {state.skipped_updates} in all"
            )
        else:
            figures = (update.reported * update.count, update.correct, update.count)
            self.board.window.add(*figures)
            self.since_evaluation.add(*figures)
        if state.step % tb.EVERY == 0:
            self.board.train(state.step, self._lr(), state.skipped_updates)

    def _lr(self) -> float:
        return self.adapter.optimizer.param_groups[0]["lr"]

    def _evaluate(self, state: TrainerState, out_of_time: bool) -> bool:
        """Score dev, save ``best`` and ``last`` (in the main process); True: the run stops."""
        self.progress.end()
        if self.board.window.pending:  # the updates since the last log, before the clock stops
            self.board.train(state.step, self._lr(), state.skipped_updates)
        try:
            stop = self._on_main(lambda: self._score_and_save(state, out_of_time), False)
        finally:
            self.board.window.restart()  # evaluating and saving are not training time
            self.since_evaluation.restart()
            self.skipped_before = state.skipped_updates
        return self._agree(stop)

    def _score_and_save(self, state: TrainerState, out_of_time: bool) -> bool:
        adapter = self.adapter
        seconds = time.perf_counter() - self.since_evaluation.started
        train = self.since_evaluation.take()
        score = adapter.evaluate(state)
        self.metric = score.metric
        state.elapsed_s = self.elapsed()
        epoch = state.epoch_number()
        improved = score.count(state, epoch)
        self.board.scalars(state.step, score.metrics, "dev")
        if score.pictures is not None and self.board.active:
            self.board.pictures(state.step, score.pictures())
        self.evaluations += 1
        if improved or self.evaluations % self.settings.show_every == 0:
            skipped = state.skipped_updates - self.skipped_before
            self._record(state, epoch, score, train, seconds)
            self.status(
                report.evaluation_line(
                    state, epoch, score, improved, train, self._lr(), seconds, skipped,
                    adapter.items,
                )
            )  # fmt: skip
        reason = self._stop_reason(state, out_of_time)
        state.stopped = reason
        if improved:
            adapter.save("best", state, resumable=False)
        adapter.save("last", state, resumable=True)
        adapter.saved(state, reason)
        if reason == "patience":
            self.log(f"early stopping: no dev improvement in {self.settings.patience} evaluations")
        return bool(reason)

    def _record(self, state: TrainerState, epoch: int, score, train: dict, seconds: float):
        """The evaluation's entry in ``state.history`` (saved with the checkpoints)."""
        entry = {"step": state.step, "epoch": epoch, "dev": dict(score.metrics)}
        if train:
            entry.update(train_loss=train["loss"], train_accuracy=train["accuracy"])
        entry.update(
            lr=self._lr(),
            seconds=round(seconds, 3),
            elapsed_s=round(state.elapsed_s, 1),
            tokens=state.tokens,
            train_s=round(state.train_s, 1),
            skipped_updates=state.skipped_updates,
            **score.extra,
        )
        state.history.append(entry)

    def _stop_reason(self, state: TrainerState, out_of_time: bool) -> str:
        """Why the run ends after this evaluation: budget, patience, epochs (the planned ones
        counted; "budget" where a time budget planned fewer), or "" (it goes on)."""
        patience = self.settings.patience
        budget = self.settings.budget_s
        if out_of_time or (budget is not None and self.elapsed() > budget):  # this process's clock
            return "budget"
        if patience is not None and state.bad_evals >= patience:
            return "patience"
        if state.epoch >= state.planned_epochs:
            return "epochs" if state.epoch >= self.settings.epochs else "budget"
        return ""

    def _interrupted(self, state: TrainerState) -> None:
        """Save ``last`` where a signal stopped the run and raise TrainingInterrupted."""
        self.progress.end()
        state.elapsed_s = self.elapsed()
        self._on_main(lambda: self.adapter.save("last", state, resumable=True))
        batch = f", batch {state.batches_done}" if state.batches_done else ""
        where = f"update {state.step} (epoch {state.epoch + 1}{batch})"
        raise self.signals.interrupted(self.run_dir / "last", where)
