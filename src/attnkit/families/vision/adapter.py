"""The vision family's part of the training loop (:mod:`attnkit.training.loop`).

Data lives on the training device as uint8 and is cut into batches of image indices there; the
training images of translated / cluttered / strip tasks are redrawn every epoch
(``data.resample``) in a background thread while the epoch before trains. An epoch a signal
interrupted is saved with its image order, and the resumed run trains the rest of it in that
order. Each epoch is counted, then scored on dev (the callable the adapter is given), and with a
time budget the planned epochs are cut to what it can still finish (:func:`plan`).
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import torch
from torch import Tensor, nn
from tqdm import tqdm

from attnkit.data.tasks.vision import Split, VisionData
from attnkit.families.vision import bundle as vckpt
from attnkit.families.vision.kinds import DeviceSplit, ModelKind
from attnkit.families.vision.scoring import batches, dev_figures, log
from attnkit.training import schedules
from attnkit.training import tensorboard as tb
from attnkit.training.loop import Update
from attnkit.training.run_log import bar_disabled
from attnkit.training.state import TrainerState
from attnkit.vision_experiment import TrainConfig, VisionConfig


def plan(cfg: TrainConfig, state: TrainerState, epoch_seconds: list[float]) -> int:
    """Planned epochs: the config's, cut to the epochs the remaining budget can finish.

    Equal to ``state.epoch`` when not even one more epoch fits: training stops
    there rather than start an epoch the budget would cut short.
    """
    if cfg.compiled:
        epoch_seconds = epoch_seconds[1:]  # the first epoch includes compiling
    if cfg.max_minutes is None or not cfg.fit_schedule_to_budget or not epoch_seconds:
        return cfg.epochs
    typical = float(np.median(epoch_seconds[1:] if len(epoch_seconds) > 1 else epoch_seconds))
    remaining = cfg.max_minutes * 60.0 - state.elapsed_s
    return min(cfg.epochs, state.epoch + int(remaining // max(typical, 1e-6)))


def rate(cfg: TrainConfig, state: TrainerState, epochs_done: float) -> float:
    """The learning rate of the next update, ``epochs_done`` (fractional) into the run."""
    progress = epochs_done / max(state.planned_epochs, 1e-9)  # the cosine spans the planned epochs
    return schedules.learning_rate(cfg, state.step, progress, epochs_done)


class _Tally:
    """Loss, correct predictions and images of the applied updates of an epoch (on the device)."""

    def __init__(self, device: torch.device):
        self.loss_sum = torch.zeros((), device=device)
        self.correct = torch.zeros((), device=device)
        self.seen = 0
        self.started = time.perf_counter()

    def add(self, loss: Tensor, correct: Tensor, images: int) -> None:
        self.loss_sum += loss * images
        self.correct += correct
        self.seen += images

    def postfix(self, lr: float) -> dict:
        rate = self.seen / max(time.perf_counter() - self.started, 1e-9)
        return {
            "loss": f"{float(self.loss_sum) / self.seen:.4f}",
            "acc": f"{100 * float(self.correct) / self.seen:.2f}%",
            "img_s": f"{rate:.0f}",
            "lr": f"{lr:.2e}",
        }


class VisionAdapter:
    """A vision model's batches, updates, dev score and checkpoints, for the training loop.

    ``dev_score()`` returns the dev ``{"images", "accuracy", "error_pct"}`` of the model as it
    is; ``resumed_order`` (N,) is the image order of the epoch a signal interrupted, or None.
    Call :meth:`close` at the end (the thread drawing the next epoch's images).
    """

    unit = "step"
    counts_epoch_first = True

    def __init__(
        self,
        cfg: VisionConfig,
        out: Path,
        kind: ModelKind,
        model: nn.Module,
        optimizer: torch.optim.Optimizer,
        data: VisionData,
        dev_split: Split,
        dev_score: Callable[[], dict],
        board: tb.Board,
        resumed_order: Tensor | None,
        first_epoch: int,
    ):
        self.cfg, self.t_cfg, self.out = cfg, cfg.train, out
        self.kind, self.model, self.optimizer = kind, model, optimizer
        self.data, self.dev_split, self.dev_score, self.board = data, dev_split, dev_score, board
        self.device = next(model.parameters()).device
        step = kind.train_step
        self.train_step = torch.compile(step) if cfg.train.compiled else step
        self.resumed_order = resumed_order
        self.order: Tensor | None = None  # (N,) the image order of the epoch being trained
        self.epoch_seconds: list[float] = []
        self.redraw = cfg.data.resample and cfg.data.task != "mnist"  # else one set for all
        self.train: DeviceSplit | None = None
        self._pool = ThreadPoolExecutor(max_workers=1)
        self._pending = self._pool.submit(data.train_split, first_epoch)

    def close(self) -> None:
        if self._pending is not None:
            self._pending.cancel()
        self._pool.shutdown(wait=True)

    def parameters(self):
        return self.model.parameters()

    # ---- an epoch ------------------------------------------------------------------------------
    def epoch_batches(self, state: TrainerState) -> list[Tensor]:
        """The index batches of epoch ``state.epoch`` over its training set (drawn meanwhile)."""
        self.began = time.perf_counter()
        if self.train is None or self.redraw:
            pending = self._pending or self._pool.submit(self.data.train_split, state.epoch)
            self.train = self.kind.to_device(pending.result(), self.device)
            more = self.redraw and state.epoch + 1 < state.planned_epochs
            # drawn while this epoch trains
            self._pending = None
            if more:
                self._pending = self._pool.submit(self.data.train_split, state.epoch + 1)
        t_cfg = self.t_cfg
        order = batches(
            len(self.train), t_cfg.batch_size, self.device, True, t_cfg.compiled, self.resumed_order
        )
        self.resumed_order = None
        self.order = torch.cat(order) if order else None
        return order

    def begin_epoch(self, state: TrainerState, n_batches: int) -> None:
        self.model.train()
        self.n_batches, self.skipped_before = n_batches, state.skipped_updates
        self.lr = rate(self.t_cfg, state, state.epoch)
        self.tally = _Tally(self.device)
        self.bar = tqdm(
            total=n_batches - state.batches_done,
            desc=f"epoch {state.epoch + 1}/{state.planned_epochs}",
            unit="batch",
            leave=False,
            disable=bar_disabled(self.t_cfg.progress),  # only on a terminal
            file=sys.stderr,
            dynamic_ncols=True,
        )

    def rate(self, state: TrainerState, index: int, n_batches: int, elapsed: float) -> float:
        self.lr = rate(self.t_cfg, state, state.epoch + index / n_batches)
        return self.lr

    def step(self, batch: Tensor, update: int) -> Update:
        """Forward and backward of one update on the images ``batch`` indexes (B,)."""
        images = self.train.batch(batch)
        loss, reported, correct = self.train_step(self.model, images, self.cfg.model)
        self.optimizer.zero_grad(set_to_none=True)
        loss.backward()
        return Update(loss.detach(), reported.detach(), correct, len(images["images"]))

    def counted(self, state: TrainerState, update: Update, applied: bool, index: int) -> None:
        self.bar.update(1)
        if applied:
            self.tally.add(update.reported, update.correct, update.count)
        tally = self.tally
        if self.t_cfg.progress and tally.seen and (index % 20 == 0 or index == self.n_batches - 1):
            self.bar.set_postfix(tally.postfix(self.lr))

    def end_epoch(self, state: TrainerState) -> None:
        self.bar.close()
        if self.board.window.pending:  # the steps since the last log: before the dev evaluation
            self.board.train(state.step, self.lr, state.skipped_updates)
        tally = self.tally
        self.stats = {
            "train_loss": float(tally.loss_sum) / max(tally.seen, 1),
            "train_accuracy": float(tally.correct) / max(tally.seen, 1),
            "images": tally.seen,
            "lr": self.lr,
            "skipped_updates": state.skipped_updates - self.skipped_before,
        }

    # ---- evaluations and checkpoints -----------------------------------------------------------
    def score(self, state: TrainerState, elapsed: Callable[[], float]) -> bool:
        """The dev error of the epoch just counted: logged, in the history, and the plan."""
        dev_stats = self.dev_score()
        self.board.scalars(state.step, dev_stats, "dev")
        figures = dev_figures(self.kind, self.model, self.dev_split, self.cfg.model)
        self.board.pictures(state.step, figures)
        seconds = time.perf_counter() - self.began
        state.elapsed_s = elapsed()
        self.epoch_seconds.append(seconds)
        improved = state.count_evaluation(dev_stats["error_pct"], higher_is_better=False)
        stats = self.stats
        state.history.append(
            {
                "epoch": state.epoch,
                **stats,
                "dev_error_pct": dev_stats["error_pct"],
                "seconds": round(seconds, 3),
            }
        )
        state.planned_epochs = plan(self.t_cfg, state, self.epoch_seconds)
        n_skipped = stats["skipped_updates"]
        skipped = f"; {n_skipped} steps skipped" if n_skipped else ""
        log(
            self.t_cfg,
            # the seq2seq trainer's shape: where the run is, the dev score first (no planned
            # epochs: a time budget re-plans them after every epoch)
            f"step {state.step} (epoch {state.epoch}): dev error {dev_stats['error_pct']:.2f}%"
            f"{' (best)' if improved else ''}; loss {stats['train_loss']:.4f}; train accuracy "
            f"{100 * stats['train_accuracy']:.2f}%; lr {stats['lr']:.1e}; {seconds:.1f} s, "
            f"{stats['images'] / max(seconds, 1e-9):,.0f} images/s{skipped}",
        )
        return improved

    def save(self, name: str, state: TrainerState, resumable: bool) -> None:
        """``out/best`` or ``out/last``; an interrupted epoch's ``last`` with its image order."""
        order = self.order if resumable and state.batches_done else None
        vckpt.save(self.out / name, self.model, self.optimizer, self.cfg, state, order, resumable)

    def saved(self, state: TrainerState, reason: str) -> None:
        """Nothing more: the run's last line says why it stopped."""

    def where(self, state: TrainerState) -> str:
        return f"step {state.step} (epoch {state.epoch + 1}, batch {state.batches_done})"
