"""Learning-rate schedules of both trainers (``train.scheduler``).

* ``constant`` -- ``lr`` throughout;
* ``cosine`` -- half a cosine from ``lr`` down to ``min_lr`` as the run's progress goes from 0
  to 1 (each trainer says what progress is: the seq2seq trainer the larger of updates done /
  planned and time used / ``max_minutes``, the vision trainer epochs done / planned epochs);
* ``step`` -- ``lr`` x ``lr_gamma`` every ``lr_step_epochs`` epochs;
* ``noam`` -- a linear rise to ``lr`` over ``warmup_steps`` updates, then 1/sqrt decay;
* ``plateau`` -- ``lr`` x ``lr_factor`` once the dev metric has not improved for
  ``lr_patience`` evaluations, never below ``min_lr`` (torch's ReduceLROnPlateau, stepped
  after each evaluation: :func:`plateau`).

All but ``plateau`` are a function of the update number and the run's progress, set before
every update (:func:`learning_rate`), so a resumed run goes on at exactly the rate it left.
``warmup_steps`` scales the rate of ``constant``, ``cosine`` and ``step`` by (update + 1) /
``warmup_steps`` over the first updates (:func:`warm_up`; ``noam`` has its own rise; ``plateau``
none). A family with no ``scheduler`` key (speech: Adam's constant rate) uses :func:`warm_up`
alone.
"""

from __future__ import annotations

import math

import torch

#: schedules set before every update from the update number (plateau is stepped by evaluations)
PER_UPDATE = ("constant", "cosine", "step", "noam")


def cosine(lr: float, min_lr: float, progress: float) -> float:
    """Half a cosine from ``lr`` (progress 0) to ``min_lr`` (progress 1 and beyond)."""
    return min_lr + (lr - min_lr) * 0.5 * (1.0 + math.cos(math.pi * min(1.0, progress)))


def step_decay(lr: float, gamma: float, every_epochs: int, epochs_done: float) -> float:
    """``lr`` x ``gamma`` for every ``every_epochs`` whole epochs done (fractions count up)."""
    return lr * gamma ** int(epochs_done // every_epochs)


def noam(lr: float, step: int, warmup_steps: int) -> float:
    """The rate of update ``step`` (0-based): ``lr`` x min((step + 1) / warm-up,
    sqrt(warm-up / (step + 1))), a linear rise to ``lr`` over ``warmup_steps`` updates, then
    1/sqrt decay."""
    warm = max(1, warmup_steps)
    return lr * min((step + 1) / warm, math.sqrt(warm / (step + 1)))


def warm_up(lr: float, step: int, warmup_steps: int) -> float:
    """``lr`` scaled by (step + 1) / ``warmup_steps`` while update ``step`` (0-based) is inside
    the warm-up, then ``lr`` itself (``warmup_steps`` 0: no warm-up)."""
    if warmup_steps and step < warmup_steps:
        return lr * (step + 1) / warmup_steps
    return lr


def run_progress(
    step: int, planned_updates: int, elapsed_s: float, budget_s: float | None
) -> float:
    """The seq2seq trainer's progress through its run: the larger of updates done / planned
    (``epochs`` x batches per epoch) and time used / ``max_minutes`` -- a time budget gets the low
    rates of a cosine's end, instead of being cut off at a high one."""
    progress = step / max(1, planned_updates)
    if budget_s:
        progress = max(progress, elapsed_s / budget_s)
    return progress


def learning_rate(tc, step: int, progress: float, epochs_done: float = 0.0) -> float:
    """The rate of update ``step`` (0-based) under ``tc.scheduler`` (one of :data:`PER_UPDATE`).

    ``tc`` is a train config (seq2seq or vision): ``lr``, ``min_lr``, ``warmup_steps``, and for
    ``step`` also ``lr_gamma`` and ``lr_step_epochs``. ``progress`` (0 to 1) drives the cosine;
    ``epochs_done`` (fractional) the step decay.
    """
    if tc.scheduler == "noam":
        return noam(tc.lr, step, tc.warmup_steps)
    if tc.scheduler == "cosine":
        lr = cosine(tc.lr, tc.min_lr, progress)
    elif tc.scheduler == "step":
        lr = step_decay(tc.lr, tc.lr_gamma, tc.lr_step_epochs, epochs_done)
    elif tc.scheduler == "constant":
        lr = tc.lr
    else:
        raise ValueError(f"{tc.scheduler!r} is not a per-update schedule")
    return warm_up(lr, step, tc.warmup_steps)


def plateau(
    optimizer: torch.optim.Optimizer, tc, higher_is_better: bool
) -> torch.optim.lr_scheduler.ReduceLROnPlateau:
    """``scheduler: plateau``: step it with each dev score; it cuts the rate by ``lr_factor``
    after ``lr_patience`` evaluations without improvement, never below ``min_lr``."""
    return torch.optim.lr_scheduler.ReduceLROnPlateau(
        optimizer,
        mode="max" if higher_is_better else "min",
        factor=tc.lr_factor,
        patience=tc.lr_patience,
        min_lr=tc.min_lr,
    )


def set_rate(optimizer: torch.optim.Optimizer, lr: float) -> None:
    """Give every parameter group of ``optimizer`` the rate ``lr``."""
    for group in optimizer.param_groups:
        group["lr"] = lr
