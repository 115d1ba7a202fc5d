"""The text-classification family's part of the training loop (:mod:`attnkit.training.loop`).

Batches are sentences of similar length (:func:`attnkit.data.tasks.text.length_batches`), in an
order drawn from ``train.seed`` and the epoch alone, so a run resumed in the middle of an epoch
trains the rest of that epoch's batches as the first run would have. The loss is the
cross-entropy of the labels, plus ``model.penalty`` x Lin et al.'s ``||AA^T - I||_F^2`` for
structured self-attention. Each epoch is counted, then scored on dev (the callable the adapter
is given: the dev accuracy, higher is better); ``train.eval_every`` N > 0 scores it every N
updates inside the epoch too. ``train.average_checkpoints`` N >= 2 keeps the N best
evaluations' weights and saves the best of their means (or the best single one) as ``averaged``
at the end (:mod:`attnkit.training.averaging`).
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from pathlib import Path

import torch
import torch.nn.functional as F
from tqdm import tqdm

from attnkit.data.tasks.text import encode, length_batches
from attnkit.families.text import bundle as tckpt
from attnkit.families.text.scoring import dev_figures, log
from attnkit.models.text_classifier import structured_penalty
from attnkit.training import schedules
from attnkit.training import tensorboard as tb
from attnkit.training.averaging import CheckpointAverager
from attnkit.training.loop import Update
from attnkit.training.run_log import bar_disabled
from attnkit.training.state import TrainerState


class TextAdapter:
    """A text classifier's batches, updates, dev score and checkpoints, for the training loop.

    ``dev_score()`` returns the dev ``{"sentences", "accuracy"}`` of the model as it is.
    """

    unit = "update"
    counts_epoch_first = True

    def __init__(
        self,
        bundle: tckpt.TextBundle,
        out: Path,
        optimizer: torch.optim.Optimizer,
        train,
        dev,
        dev_score: Callable[[], dict],
        board: tb.Board,
    ):
        self.bundle, self.out, self.optimizer = bundle, out, optimizer
        self.model, self.t_cfg = bundle.model, bundle.config.train
        self.train, self.dev, self.dev_score, self.board = train, dev, dev_score, board
        self.device = next(self.model.parameters()).device
        model_cfg = bundle.config.model
        self.penalty = model_cfg.penalty if model_cfg.attention == "structured" else 0.0

    def parameters(self):
        return self.model.parameters()

    def epoch_batches(self, state: TrainerState) -> list[list[int]]:
        """Epoch ``state.epoch``'s batches of training indices (the same for a resumed run)."""
        self.began = time.perf_counter()
        generator = torch.Generator().manual_seed(self.t_cfg.seed * 100_003 + state.epoch)
        lengths = [len(e.words) for e in self.train]
        return length_batches(lengths, self.t_cfg.batch_size, generator)

    def begin_epoch(self, state: TrainerState, n_batches: int) -> None:
        self.model.train()
        self.n_batches, self.skipped_before = n_batches, state.skipped_updates
        self.loss_sum, self.right, self.seen = 0.0, 0, 0
        self.lr = self.rate(state, state.batches_done, n_batches, 0.0)
        self.bar = tqdm(
            total=n_batches - state.batches_done,
            desc=f"epoch {state.epoch + 1}/{state.planned_epochs}",
            unit="batch",
            leave=False,
            disable=bar_disabled(self.t_cfg.progress),
            file=sys.stderr,
            dynamic_ncols=True,
        )

    def rate(self, state: TrainerState, index: int, n_batches: int, elapsed: float) -> float:
        epochs_done = state.epoch + index / max(n_batches, 1)
        progress = epochs_done / max(state.planned_epochs, 1e-9)
        self.lr = schedules.learning_rate(self.t_cfg, state.step, progress, epochs_done)
        return self.lr

    def step(self, batch: list[int], update: int) -> Update:
        """Forward and backward of one update on the training sentences ``batch`` indexes."""
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

    def counted(self, state: TrainerState, update: Update, applied: bool, index: int) -> None:
        self.bar.update(1)
        if applied:
            self.loss_sum += float(update.reported) * update.count
            self.right += int(update.correct)
            self.seen += update.count
        if self.t_cfg.progress and self.seen and (index % 20 == 0):
            self.bar.set_postfix(loss=f"{self.loss_sum / self.seen:.4f}", lr=f"{self.lr:.2e}")

    def end_epoch(self, state: TrainerState) -> None:
        self.bar.close()
        if self.board.window.pending:
            self.board.train(state.step, self.lr, state.skipped_updates)

    def _train_stats(self, state: TrainerState) -> dict:
        """The training figures of the epoch so far (all of it, once it is counted)."""
        return {
            "train_loss": self.loss_sum / max(self.seen, 1),
            "train_accuracy": self.right / max(self.seen, 1),
            "sentences": self.seen,
            "lr": self.lr,
            "skipped_updates": state.skipped_updates - self.skipped_before,
        }

    def score(self, state: TrainerState, elapsed: Callable[[], float]) -> bool:
        """The dev accuracy after the epoch just counted, or inside an epoch every
        ``train.eval_every`` updates: logged, in TensorBoard and the history."""
        dev_stats = self.dev_score()
        self.board.scalars(state.step, dev_stats, "dev")
        bundle = self.bundle
        figures = dev_figures(self.model, self.dev, bundle.vocab, bundle.labels)
        self.board.pictures(state.step, figures)
        seconds = time.perf_counter() - self.began
        state.elapsed_s = elapsed()
        improved = state.count_evaluation(dev_stats["accuracy"], higher_is_better=True)
        stats = self._train_stats(state)
        state.history.append(
            {
                "epoch": state.epoch,
                "step": state.step,
                **stats,
                "dev_accuracy": dev_stats["accuracy"],
                "seconds": round(seconds, 3),
            }
        )
        skipped = stats["skipped_updates"]
        log(
            self.t_cfg.verbose,
            f"{self._when(state)}  loss {stats['train_loss']:.4f}  "
            f"train acc {100 * stats['train_accuracy']:.2f}%  dev acc "
            f"{100 * dev_stats['accuracy']:.2f}%{' *' if improved else ''}  lr {stats['lr']:.2e}  "
            f"{seconds:.1f}s{f'  {skipped} updates skipped' if skipped else ''}",
        )
        return improved

    def _when(self, state: TrainerState) -> str:
        """ "epoch 2/6" after an epoch is counted; "epoch 3/6, batch 300/1207" inside one."""
        if 0 < state.batches_done < self.n_batches:
            return (
                f"epoch {state.epoch + 1}/{state.planned_epochs}, "
                f"batch {state.batches_done}/{self.n_batches}"
            )
        return f"epoch {state.epoch}/{state.planned_epochs}"

    def save(self, name: str, state: TrainerState, resumable: bool) -> None:
        tckpt.save(self.out / name, self.bundle, self.optimizer, state, resumable)

    def saved(self, state: TrainerState, reason: str) -> None:
        """With ``train.average_checkpoints`` N >= 2: this evaluation's weights kept if they are
        among the N best (``OUT/top``), and after the run's last evaluation (``reason``: why
        it stops) the best of their means saved as ``OUT/averaged``."""
        n = self.t_cfg.average_checkpoints
        if n < 2:
            return
        say = lambda m: log(self.t_cfg.verbose, m)  # noqa: E731
        averager = CheckpointAverager(self.out, n, "accuracy", True, say)
        history = [
            {"step": h["step"], "dev": {"accuracy": h["dev_accuracy"]}} for h in state.history
        ]
        view = tckpt.AveragingView(self.bundle)
        averager.keep(view, state.step, history)
        if reason:
            averager.average(view, history, self.dev_score)

    def where(self, state: TrainerState) -> str:
        return f"update {state.step} (epoch {state.epoch + 1}, batch {state.batches_done})"
