"""The vision family's part of the training loop (:mod:`attnkit.training.loop`).

Data lives on the training device as uint8 and is cut into batches of image indices there; the
training images of translated / cluttered / strip tasks are redrawn every epoch
(``data.resample``) in a background thread while the epoch before trains. An epoch a signal
interrupted is saved with its image order, and the resumed run trains the rest of it in that
order. Each epoch is counted, then scored on dev (the callable the adapter is given), and with a
time budget the planned epochs are cut to what it can still finish (:func:`plan`).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import torch
from torch import Tensor, nn

from attnkit.data.tasks.vision import Split, VisionData
from attnkit.families.vision import bundle as vckpt
from attnkit.families.vision.config import TrainConfig, VisionConfig
from attnkit.families.vision.kinds import DeviceSplit, ModelKind
from attnkit.families.vision.scoring import batches, dev_figures
from attnkit.training import schedules
from attnkit.training.loop import Update
from attnkit.training.report import DevScore
from attnkit.training.state import TrainerState


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


class VisionAdapter:
    """A vision model's batches, updates, dev score and checkpoints, for the training loop.

    ``dev_score()`` returns the dev ``{"images", "accuracy", "error_pct"}`` of the model as it
    is; ``resumed_order`` (N,) is the image order of the epoch a signal interrupted, or None.
    Call :meth:`close` at the end (the thread drawing the next epoch's images).
    """

    items = "images"

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
        resumed_order: Tensor | None,
        first_epoch: int,
    ):
        self.cfg, self.t_cfg, self.out = cfg, cfg.train, out
        self.kind, self.model, self.optimizer = kind, model, optimizer
        self.data, self.dev_split, self.dev_score = data, dev_split, dev_score
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

    def rate(self, state: TrainerState, index: int, n_batches: int, elapsed: float) -> float:
        return rate(self.t_cfg, state, state.epoch + index / n_batches)

    def step(self, batch: Tensor, update: int) -> Update:
        """Forward and backward of one update on the images ``batch`` indexes (B,)."""
        self.model.train()
        images = self.train.batch(batch)
        loss, reported, correct = self.train_step(self.model, images, self.cfg.model)
        self.optimizer.zero_grad(set_to_none=True)
        loss.backward()
        return Update(loss.detach(), reported.detach(), correct, len(images["images"]))

    # ---- evaluations and checkpoints -----------------------------------------------------------
    def evaluate(self, state: TrainerState) -> DevScore:
        """The dev error % (lower is better) of the weights as they are, with pictures of where
        the model looks; with a time budget, the epochs it can still finish (:func:`plan`)."""
        dev = self.dev_score()
        self.epoch_seconds.append(time.perf_counter() - self.began)
        # a budget spent mid-epoch is evaluated there: the epoch in progress stays planned
        state.planned_epochs = max(
            plan(self.t_cfg, state, self.epoch_seconds), state.epoch_number()
        )
        return DevScore(
            {"error_pct": dev["error_pct"], "accuracy": dev["accuracy"]},
            "error_pct",
            higher_is_better=False,
            pictures=lambda: dev_figures(self.kind, self.model, self.dev_split, self.cfg.model),
        )

    def save(self, name: str, state: TrainerState, resumable: bool) -> None:
        """``out/best`` or ``out/last``; an interrupted epoch's ``last`` with its image order."""
        order = self.order if resumable and state.batches_done else None
        vckpt.save(self.out / name, self.model, self.optimizer, self.cfg, state, order, resumable)

    def saved(self, state: TrainerState, reason: str) -> None:
        """Nothing more: the run's last line says why it stopped."""
