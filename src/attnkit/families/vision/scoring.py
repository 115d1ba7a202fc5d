"""The error of a vision model on a split, and the index batches it (and an epoch) is cut into.

Data lives on the training device as uint8 (a :class:`DeviceSplit`) and is cut into batches of
image indices there (:func:`batches`; an interrupted epoch goes on in its saved order).
:func:`evaluate_split` is the dev score a training run is given;
:mod:`attnkit.families.vision.evaluate` scores checkpoints with :func:`predict_split`. Training is
:mod:`attnkit.families.vision.adapter`'s.
"""

from __future__ import annotations

import sys

import numpy as np
import torch
from torch import Tensor, nn
from tqdm import tqdm

from attnkit.data.tasks.vision import Split
from attnkit.errors import CheckpointError
from attnkit.families.vision.config import TrainConfig
from attnkit.families.vision.kinds import DeviceSplit, ModelKind
from attnkit.training import tensorboard as tb


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
    kind: ModelKind,
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
            correct += kind.count_correct(model, split.batch(idx), model_cfg, mc_samples)
    return error_scores(len(split), float(correct))


def predict_split(
    kind: ModelKind,
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
            predictions = kind.predict(model, batch, model_cfg, mc_samples)
            answers += kind.answers(predictions)
            right.append(kind.right(predictions, batch).cpu())
    return answers, torch.cat(right).numpy() if right else np.zeros(0, dtype=bool)


def error_scores(images: int, right: float) -> dict:
    """``{"images", "accuracy", "error_pct"}`` from the counts: 410 wrong of 10,000 is exactly 4.1,
    where 100 * (1 - 0.959) is 4.100000000000001."""
    return {
        "images": images,
        "accuracy": right / max(images, 1),
        "error_pct": 100.0 * (images - right) / max(images, 1),
    }


def dev_figures(kind: ModelKind, model: nn.Module, dev: Split, model_cfg):
    """(tag, figure) of where the model looks on each of the first dev images."""
    model.eval()
    with tb.forked_rng(next(model.parameters()).device):
        for i in range(min(tb.EXAMPLES, len(dev.images))):
            yield f"attention/dev{i}", kind.figure(model, dev.images[i], dev.labels[i], model_cfg)
