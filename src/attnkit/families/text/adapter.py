"""The text-classification family's part of the training loop (:mod:`attnkit.training.loop`).

Batches are sentences of similar length (:func:`attnkit.data.tasks.text.length_batches`), in an
order drawn from ``train.seed`` and the epoch alone, so a run resumed in the middle of an epoch
trains the rest of that epoch's batches as the first run would have. The loss is the
cross-entropy of the labels, plus ``model.penalty`` x Lin et al.'s ``||AA^T - I||_F^2`` for
structured self-attention. Each epoch is counted, then scored on dev (the callable the adapter
is given: the dev accuracy, higher is better); ``train.eval_every`` N > 0 scores it every N
updates instead. ``train.average_checkpoints`` N >= 2 keeps the N best
evaluations' weights and saves the best of their means (or the best single one) as ``averaged``
at the end (:mod:`attnkit.training.averaging`).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import torch
import torch.nn.functional as F

from attnkit.data.tasks.text import encode, length_batches
from attnkit.families.text import bundle as tckpt
from attnkit.families.text.scoring import dev_figures
from attnkit.models.text_classifier import structured_penalty
from attnkit.training import schedules
from attnkit.training.averaging import CheckpointAverager
from attnkit.training.loop import Update
from attnkit.training.report import DevScore
from attnkit.training.state import TrainerState


class TextAdapter:
    """A text classifier's batches, updates, dev score and checkpoints, for the training loop.

    ``dev_score()`` returns the dev ``{"sentences", "accuracy"}`` of the model as it is.
    """

    items = "sentences"

    def __init__(
        self,
        bundle: tckpt.TextBundle,
        out: Path,
        optimizer: torch.optim.Optimizer,
        train,
        dev,
        dev_score: Callable[[], dict],
        log: Callable[[str], None],
    ):
        self.bundle, self.out, self.optimizer = bundle, out, optimizer
        self.model, self.t_cfg = bundle.model, bundle.config.train
        self.train, self.dev, self.dev_score, self.log = train, dev, dev_score, log
        self.device = next(self.model.parameters()).device
        model_cfg = bundle.config.model
        self.penalty = model_cfg.penalty if model_cfg.attention == "structured" else 0.0

    def parameters(self):
        return self.model.parameters()

    def epoch_batches(self, state: TrainerState) -> list[list[int]]:
        """Epoch ``state.epoch``'s batches of training indices (the same for a resumed run)."""
        generator = torch.Generator().manual_seed(self.t_cfg.seed * 100_003 + state.epoch)
        lengths = [len(e.words) for e in self.train]
        return length_batches(lengths, self.t_cfg.batch_size, generator)

    def rate(self, state: TrainerState, index: int, n_batches: int, elapsed: float) -> float:
        epochs_done = state.epoch + index / max(n_batches, 1)
        progress = epochs_done / max(state.planned_epochs, 1e-9)
        return schedules.learning_rate(self.t_cfg, state.step, progress, epochs_done)

    def step(self, batch: list[int], update: int) -> Update:
        """Forward and backward of one update on the training sentences ``batch`` indexes."""
        self.model.train()
        tokens, mask = encode([self.train[i].words for i in batch], self.bundle.vocab)
        labels = torch.tensor([self.train[i].label for i in batch], device=self.device)
        logits, weights = self.model(tokens.to(self.device), mask.to(self.device))
        reported = F.cross_entropy(logits, labels)
        loss = reported
        if self.penalty:
            loss = loss + self.penalty * structured_penalty(weights)
        self.optimizer.zero_grad(set_to_none=True)
        loss.backward()
        correct = (logits.argmax(-1) == labels).sum()
        return Update(loss.detach(), reported.detach(), correct, len(batch))

    def evaluate(self, state: TrainerState) -> DevScore:
        """The dev accuracy (higher is better), with pictures of dev sentences' attention."""
        dev = self.dev_score()
        bundle = self.bundle
        return DevScore(
            {"accuracy": dev["accuracy"]},
            "accuracy",
            higher_is_better=True,
            pictures=lambda: dev_figures(self.model, self.dev, bundle.vocab, bundle.labels),
        )

    def save(self, name: str, state: TrainerState, resumable: bool) -> None:
        tckpt.save(self.out / name, self.bundle, self.optimizer, state, resumable)

    def saved(self, state: TrainerState, reason: str) -> None:
        """With ``train.average_checkpoints`` N >= 2: this evaluation's weights kept if they are
        among the N best (``OUT/top``), and after the run's last evaluation (``reason``: why
        it stops) the best of their means saved as ``OUT/averaged``."""
        n = self.t_cfg.average_checkpoints
        if n < 2:
            return
        averager = CheckpointAverager(self.out, n, "accuracy", True, self.log)
        view = tckpt.AveragingView(self.bundle)
        averager.keep(view, state.step, state.history)
        if reason:
            averager.average(view, state.history, self.dev_score)
