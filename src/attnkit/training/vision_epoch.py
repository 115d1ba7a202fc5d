"""One epoch of vision training, and the error of a model on a split.

Data lives on the training device as uint8 (a :class:`DeviceSplit`) and is cut into batches of
image indices there. An epoch can be cut short by a signal before any update and resumed from the
same batch in the same image order (:class:`EpochStop`).
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import torch
from torch import Tensor, nn
from tqdm import tqdm

from attnkit.data.tasks.vision import Split
from attnkit.errors import CheckpointError
from attnkit.training import schedules
from attnkit.training import tensorboard as tb
from attnkit.training.guard import UpdateGuard
from attnkit.training.run_log import bar_disabled
from attnkit.training.state import TrainerState
from attnkit.training.vision_config import TrainConfig, VisionConfig
from attnkit.training.vision_families import DeviceSplit, Family


def log(cfg: TrainConfig, message: str) -> None:
    """One line on stderr, above any progress bar (``train.verbose``)."""
    if cfg.verbose:
        tqdm.write(message, file=sys.stderr)


def batches(
    n: int,
    batch_size: int,
    device: torch.device,
    shuffle: bool,
    drop_last: bool = False,
    order: Tensor | None = None,
) -> list[Tensor]:
    """Index tensors of the batches, in ``order`` (N,) when given (an interrupted epoch's)."""
    if order is None:
        order = torch.randperm(n, device=device) if shuffle else torch.arange(n, device=device)
    elif order.numel() > n or (order.numel() and int(order.max()) >= n):
        raise CheckpointError(
            f"the interrupted epoch's saved image order (epoch_order) does not fit "
            f"this training set of {n} images"
        )
    out = list(order.split(batch_size))
    if drop_last and len(out) > 1 and len(out[-1]) < batch_size:
        out.pop()  # one batch shape: a compiled step is not recompiled for the remainder
    return out


def evaluate_split(
    family: Family,
    model: nn.Module,
    split: DeviceSplit,
    model_cfg,
    batch_size: int,
    mc_samples: int | None = None,
) -> dict:
    """Accuracy / error % of ``model`` on a split already on the model's device."""
    model.eval()
    correct = torch.zeros((), device=split.images.device)
    with torch.no_grad():
        for idx in batches(len(split), batch_size, split.images.device, shuffle=False):
            correct += family.count_correct(model, split.batch(idx), model_cfg, mc_samples)
    return error_scores(len(split), float(correct))


def predict_split(
    family: Family,
    model: nn.Module,
    split: DeviceSplit,
    model_cfg,
    batch_size: int,
    mc_samples: int | None = None,
) -> tuple[list[str], np.ndarray]:
    """``(answers, right)`` of ``model`` on every image of a split on its device, in order: each
    answer as text ("7", "4071") and (N,) bool. The same batches and random draws as
    :func:`evaluate_split`, so the same error %."""
    model.eval()
    answers: list[str] = []
    right: list[Tensor] = []
    with torch.no_grad():
        for idx in batches(len(split), batch_size, split.images.device, shuffle=False):
            batch = split.batch(idx)
            predictions = family.predict(model, batch, model_cfg, mc_samples)
            answers += family.answers(predictions)
            right.append(family.right(predictions, batch).cpu())
    return answers, torch.cat(right).numpy() if right else np.zeros(0, dtype=bool)


def error_scores(images: int, right: float) -> dict:
    """``{"images", "accuracy", "error_pct"}`` from the counts: 410 wrong of 10,000 is exactly 4.1,
    where 100 * (1 - 0.959) is 4.100000000000001."""
    return {
        "images": images,
        "accuracy": right / max(images, 1),
        "error_pct": 100.0 * (images - right) / max(images, 1),
    }


def dev_figures(family: Family, model: nn.Module, dev: Split, model_cfg):
    """(tag, figure) of where the model looks on each of the first dev images."""
    model.eval()
    with tb.forked_rng(next(model.parameters()).device):
        for i in range(min(tb.EXAMPLES, len(dev.images))):
            yield f"attention/dev{i}", family.figure(model, dev.images[i], dev.labels[i], model_cfg)


@dataclass
class EpochStop:
    """How an epoch may be cut short by a signal, and resumed where it was."""

    requested: Callable[[], bool] = lambda: False
    order: Tensor | None = None  # (N,) the epoch's image order: given to resume, set by the epoch
    interrupted: bool = False


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


def rate(cfg: TrainConfig, state: TrainerState, epochs_done: float) -> float:
    """The learning rate of the next update, ``epochs_done`` (fractional) into the run."""
    progress = epochs_done / max(state.planned_epochs, 1e-9)  # the cosine spans the planned epochs
    return schedules.learning_rate(cfg, state.step, progress, epochs_done)


def train_epoch(
    step,
    model,
    optimizer,
    cfg: VisionConfig,
    split: DeviceSplit,
    state: TrainerState,
    deadline: float | None,
    guard: UpdateGuard,
    stop: EpochStop,
    board: tb.Board,
) -> dict:
    """One pass over ``split``; ``step`` is the family's ``train_step`` (possibly compiled).

    With ``stop``: goes on from ``stop.order`` at ``state.batches_done`` (an interrupted epoch), and
    ends before the next update once ``stop.requested()``, leaving the order in ``stop.order``.
    ``guard`` skips the steps whose loss or gradient norm is not finite; they are left out of the
    statistics. ``board`` gets the training scalars every :data:`tb.EVERY` steps.
    """
    model.train()
    t_cfg = cfg.train
    skipped_before = state.skipped_updates
    device = split.images.device
    order = batches(len(split), t_cfg.batch_size, device, True, t_cfg.compiled, stop.order)
    stop.order = torch.cat(order) if order else None
    first, lr = state.batches_done, rate(t_cfg, state, state.epoch)
    tally = _Tally(device)
    board.window.restart()
    bar = tqdm(
        order[first:],
        desc=f"epoch {state.epoch + 1}/{state.planned_epochs}",
        unit="batch",
        leave=False,
        disable=bar_disabled(t_cfg.progress),  # only on a terminal
        file=sys.stderr,
        dynamic_ncols=True,
    )
    for i, idx in enumerate(bar, start=first):
        if stop.requested():
            stop.interrupted = True
            break
        lr = rate(t_cfg, state, state.epoch + i / len(order))
        schedules.set_rate(optimizer, lr)
        _update(step, model, optimizer, cfg, split.batch(idx), state, guard, tally, board)
        state.batches_done = i + 1
        if state.step % tb.EVERY == 0:
            board.train(state.step, lr, state.skipped_updates)
        if t_cfg.progress and tally.seen and (i % 20 == 0 or i == len(order) - 1):
            bar.set_postfix(tally.postfix(lr))
        if deadline is not None and time.perf_counter() > deadline:
            break
    bar.close()
    if board.window.pending:  # the steps since the last log: before the dev evaluation
        board.train(state.step, lr, state.skipped_updates)
    return {
        "train_loss": float(tally.loss_sum) / max(tally.seen, 1),
        "train_accuracy": float(tally.correct) / max(tally.seen, 1),
        "images": tally.seen,
        "lr": lr,
        "skipped_updates": state.skipped_updates - skipped_before,
    }


def _update(step, model, optimizer, cfg: VisionConfig, batch: dict, state, guard, tally, board):
    """One optimizer step on ``batch``, or none where its loss or gradient norm is not finite."""
    loss, reported, batch_correct = step(model, batch, cfg.model)
    optimizer.zero_grad(set_to_none=True)
    loss.backward()
    state.step += 1
    if guard.step(optimizer, model.parameters(), loss.detach(), cfg.train.clip, state.step):
        state.skipped_updates += 1
        log(
            cfg.train,
            f"step {state.step}: skipped, not finite ({guard.last_reason}); "
            f"{guard.in_a_row} in a row, {state.skipped_updates} in all",
        )
    else:
        images = len(batch["images"])
        tally.add(reported.detach(), batch_correct, images)
        board.window.add(reported.detach() * images, batch_correct, images)
