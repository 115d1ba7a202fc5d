"""Training for the pointer-network family (``family: pointer``).

:func:`train_pointer` draws the task's splits (:mod:`attnkit.data.tasks.pointer`, exact
solutions), builds the model (:mod:`attnkit.models.pointer`) and trains it with teacher forcing
(the negative log-likelihood of every reference pointer) in the shared training loop
(:mod:`attnkit.training.loop`, set up by the driver :mod:`attnkit.training.run`) through
:class:`PointerAdapter`: epochs of shuffled instances, the time budget, signals, skipped
non-finite updates, patience, the log, TensorBoard. The dev
score is the callable the caller hands in (``training/`` imports nothing of ``evaluation/``);
``OUT/best`` keeps the best dev score, ``OUT/last`` the latest evaluation's weights.

Checkpoints are the family ``pointer`` of :mod:`attnkit.checkpoint`: weights, the resolved
config and the trainer counters; ``OUT/last`` also the optimizer and the RNG, from which
``--resume`` goes on (:mod:`attnkit.training.resumable`), with the config saved there.
:func:`attnkit.families.pointer.bundle.load_pointer` reads a checkpoint back.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

import torch
from torch import Tensor

from attnkit.config import apply_overrides
from attnkit.data.tasks.pointer import PointerData, PointerSplit, make_split
from attnkit.families.base import TrainRequest
from attnkit.families.pointer.bundle import build_model
from attnkit.families.pointer.config import FAMILY, PointerExperiment, parse_config
from attnkit.models.pointer import PointerNet
from attnkit.training import resumable as resumable_run
from attnkit.training import resume_config as rules
from attnkit.training import schedules
from attnkit.training.loop import Update
from attnkit.training.report import DevScore
from attnkit.training.run import Context, Plan, Started, run
from attnkit.training.state import TrainerState

__all__ = ["nll", "train", "train_pointer"]

#: a dev scorer: (model, split, data config) -> scores with ``metric`` and ``higher_is_better``
DevScorer = Callable[[PointerNet, PointerSplit, PointerData], dict]
#: dev pictures: (model, split, data config) -> (tag, matplotlib figure) pairs, made lazily
DevFigures = Callable[[PointerNet, PointerSplit, PointerData], Iterable[tuple[str, Any]]]


def nll(log_probs: Tensor, targets: Tensor) -> tuple[Tensor, Tensor, int]:
    """Mean negative log-likelihood of the reference slots: log_probs (B, T, S), targets (B, T)
    (-1: padding) -> loss, correct argmax pointers, counted steps."""
    keep = targets >= 0
    picked = log_probs.gather(-1, targets.clamp_min(0).unsqueeze(-1)).squeeze(-1)  # (B, T)
    count = int(keep.sum())
    loss = -(picked * keep).sum() / max(count, 1)
    correct = ((log_probs.argmax(-1) == targets) & keep).sum()
    return loss, correct, count


class PointerAdapter:
    """The pointer family's part of the training loop (see :class:`FamilyAdapter`)."""

    items = "instances"

    def __init__(self, cfg, out, model, optimizer, train: PointerSplit, dev):
        """``dev``: (model -> dev scores, model -> (tag, figure) pairs or None)."""
        self.cfg, self.out, self.model, self.optimizer = cfg, out, model, optimizer
        self.dev_score, self.dev_figures = dev
        self.device = next(model.parameters()).device
        self.inputs = torch.as_tensor(train.inputs, device=self.device)  # (N, n, d)
        self.targets = torch.as_tensor(train.targets, device=self.device)  # (N, L)
        self.generator = torch.Generator().manual_seed(cfg.train.seed)
        self.drawn = 0  # the epochs whose order the generator has drawn

    def parameters(self):
        return self.model.parameters()

    def epoch_batches(self, state: TrainerState) -> list[Tensor]:
        """Epoch ``state.epoch``'s batches: the generator's draw for that epoch (a resumed run
        draws the epochs before it again first, so its orders are the first run's)."""
        while True:
            order = torch.randperm(len(self.inputs), generator=self.generator)
            self.drawn += 1
            if self.drawn > state.epoch:
                return list(order.split(self.cfg.train.batch_size))

    def rate(self, state, index, n_batches, elapsed):
        """None (the optimizer's constant rate), or the cosine's rate at the run's progress:
        the larger of the planned epochs' share done and the time budget's share spent."""
        t_cfg = self.cfg.train
        if t_cfg.scheduler == "constant":
            return None
        progress = (state.epoch + index / max(n_batches, 1)) / max(state.planned_epochs, 1)
        if t_cfg.max_minutes:
            progress = max(progress, elapsed / (60 * t_cfg.max_minutes))
        return schedules.cosine(t_cfg.lr, t_cfg.min_lr, progress)

    def step(self, batch: Tensor, update: int) -> Update:
        self.model.train()
        batch = batch.to(self.device)
        targets = self.targets[batch]
        longest = int((targets >= 0).sum(1).max())  # the batch's longest output
        log_probs = self.model(self.inputs[batch], targets[:, :longest])
        loss, correct, count = nll(log_probs, targets[:, :longest])
        self.optimizer.zero_grad(set_to_none=True)
        loss.backward()
        loss = loss.detach()
        return Update(loss, float(loss), int(correct), count)

    def evaluate(self, state: TrainerState) -> DevScore:
        """The dev scores of the weights as they are (the scorer names the deciding one), with
        pictures of dev instances where the adapter was given them."""
        self.model.eval()
        dev = self.dev_score(self.model)
        figures = {
            k: v
            for k, v in dev.items()
            if isinstance(v, int | float) and not isinstance(v, bool) and k != "items"
        }
        pictures = None
        if self.dev_figures is not None:
            pictures = lambda: self.dev_figures(self.model)  # noqa: E731
        return DevScore(figures, dev["metric"], dev["higher_is_better"], pictures=pictures)

    def save(self, name: str, state: TrainerState, resumable: bool) -> None:
        optimizer = self.optimizer if resumable else None
        resumable_run.save_checkpoint(
            self.out / name, FAMILY, self.model, self.cfg.to_dict(), state, optimizer
        )

    def saved(self, state: TrainerState, reason: str) -> None:
        """Nothing more: the run's last line says why it stopped."""


def train_pointer(
    config: dict,
    dev_scorer: DevScorer,
    output_dir: Path | None = None,
    source: str = "config",
    overwrite: bool = False,
    overrides: Sequence[str] | None = None,
    resume: bool = False,
    dev_figures: DevFigures | None = None,
) -> Path:
    """Train the experiment ``config`` (the parsed YAML, ``overrides`` applied); returns
    ``OUT/best``. A fresh run refuses an OUT holding checkpoints unless ``overwrite``.
    ``dev_figures``: pictures of dev instances for TensorBoard after each evaluation."""
    cfg = parse_config(apply_overrides(config, overrides or ()), source)
    out = Path(output_dir) if output_dir is not None else Path(cfg.output_dir)
    if resume:
        cfg = resumable_run.config_to_resume(
            cfg, out / "last", overrides or (), source, parse_config, rules.POINTER
        )
    plan = Plan(out, cfg.train, "instances", resume, overwrite, source)
    return run(plan, lambda context: _start(cfg, (dev_scorer, dev_figures), context))


def _start(cfg: PointerExperiment, scorers, context: Context) -> Started:
    """The task's splits (solved exactly), the model and optimizer (fresh, or ``last``'s) and
    the adapter."""
    t_cfg, out, device = cfg.train, context.plan.out, context.device
    began = time.perf_counter()
    train, dev = make_split(cfg.data, "train"), make_split(cfg.data, "dev")
    model = build_model(cfg).to(device)
    optimizer = torch.optim.Adam(model.parameters(), lr=t_cfg.lr)
    state = TrainerState(planned_epochs=t_cfg.epochs)
    if context.plan.resume:
        state = resumable_run.restore(out / "last", FAMILY, model, optimizer)
        state.stopped, state.planned_epochs = "", t_cfg.epochs
    parameters = sum(p.numel() for p in model.parameters())
    context.log(
        f"pointer {cfg.data.task} n={cfg.data.points}: {len(train)} train / {len(dev)} dev "
        f"instances (solved in {time.perf_counter() - began:.1f}s); {parameters:,} parameters; "
        f"device {device}"
    )
    dev_scorer, dev_figures = scorers
    score = lambda m: dev_scorer(m, dev, cfg.data)  # noqa: E731
    figures = None if dev_figures is None else lambda m: dev_figures(m, dev, cfg.data)  # noqa: E731
    return Started(PointerAdapter(cfg, out, model, optimizer, train, (score, figures)), state)


def train(data: dict, request: TrainRequest) -> Path:
    """``attnkit.train`` of a pointer-network experiment: its best checkpoint."""
    from attnkit.families.pointer.evaluate import dev_figures, dev_scorer

    # the dev scorer is handed in: the loop scores dev through the family's evaluation
    return train_pointer(data, dev_scorer, **request.run_options(), dev_figures=dev_figures)
