"""A seq2seq run's counters (``trainer.json``) and checkpoints.

:class:`TrainerState` is what a resumed run goes on from; :func:`save_checkpoint` writes a
checkpoint with it; :class:`RunCheckpoints` does what follows each dev evaluation (counting,
the plateau schedule, the log line, ``best``/``last``/``top``, early stopping) and the end of a
run (``averaged``).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import torch

from attnkit.experiment import ExperimentConfig
from attnkit.training import resume
from attnkit.training.averaging import CheckpointAverager
from attnkit.training.guard import check_weights
from attnkit.translator import Translator


@dataclass
class TrainerState:
    """Counters that a resumed run continues from (saved as trainer.json)."""

    epoch: int = 0  # current epoch (0-based)
    batches_done: int = 0  # batches of the current epoch already trained
    step: int = 0
    best: float | None = None
    best_step: int = 0
    bad_evals: int = 0
    elapsed_s: float = 0.0
    tokens: int = 0  # target tokens trained on (EOS included)
    train_s: float = 0.0  # seconds spent in updates: evaluation and checkpointing left out
    finished: bool = False
    skipped_updates: int = 0  # batches with a NaN/inf loss or gradient norm: no update applied
    history: list = field(default_factory=list)

    def count_evaluation(self, value: float, higher_is_better: bool) -> bool:
        """Count a dev evaluation whose metric is ``value`` into best / bad_evals; True when it
        is the best so far."""
        improved = self.best is None or (
            value > self.best if higher_is_better else value < self.best
        )
        if improved:
            self.best, self.best_step, self.bad_evals = value, self.step, 0
        else:
            self.bad_evals += 1
        return improved

    def add_history(self, metrics: dict, lr: float) -> None:
        """An evaluation's entry in ``history``: its dev metrics and where the run stood."""
        self.history.append(
            {
                "step": self.step,
                "epoch": self.epoch + 1,
                "dev": metrics,
                "lr": lr,
                "elapsed_s": round(self.elapsed_s, 1),
                "tokens": self.tokens,
                "train_s": round(self.train_s, 1),
                "skipped_updates": self.skipped_updates,
            }
        )


def save_checkpoint(
    translator: Translator,
    directory: Path,
    state: TrainerState,
    optimizer,
    scheduler,
    metric: str,
    backend_record: dict,
    resumable: bool = True,
) -> None:
    """Weights, tokenizers and config (``translator.save``) with the trainer's counters, the dev
    metric and the backend; ``resumable`` adds what ``--resume`` needs: the optimizer, the plateau
    schedule's state and the RNG (``last`` has them; ``best`` is for decoding and reports, a third
    of the size)."""
    check_weights(translator.model, f"update {state.step}: {directory} not written")
    trainer_state = {"state": state.__dict__, "metric": metric, "backend": backend_record}
    if not resumable:
        translator.save(directory, trainer_state)
        return
    info, tensors = resume.optimizer_to_tensors(optimizer)
    tensors["rng.torch"] = torch.get_rng_state()
    trainer_state["optimizer"] = info
    trainer_state["scheduler"] = (
        scheduler.state_dict()
        if isinstance(scheduler, torch.optim.lr_scheduler.ReduceLROnPlateau)
        else None
    )
    translator.save(directory, trainer_state, tensors)


class RunCheckpoints:
    """``best``, ``last``, ``top`` and ``averaged`` of a run directory, and the bookkeeping of
    each dev evaluation that decides them (in the process that writes the run directory)."""

    def __init__(
        self, cfg: ExperimentConfig, metric: str, higher_is_better: bool, log: Callable
    ) -> None:
        self.cfg, self.run_dir = cfg, cfg.run_dir
        self.metric, self.higher_is_better, self.log = metric, higher_is_better, log
        self.backend_record: dict = {}  # the backend training runs on: set once it is resolved

    def save(self, translator: Translator, name: str, state: TrainerState, optimizer, scheduler):
        """``RUN/name``; only ``last`` carries the optimizer, schedule and RNG for --resume."""
        save_checkpoint(
            translator,
            self.run_dir / name,
            state,
            optimizer,
            scheduler,
            self.metric,
            self.backend_record,
            resumable=name == "last",
        )

    def averager(self) -> CheckpointAverager:
        n = self.cfg.train.average_checkpoints
        return CheckpointAverager(self.run_dir, n, self.metric, self.higher_is_better, self.log)

    def after_evaluation(
        self,
        translator: Translator,
        metrics: dict,
        state: TrainerState,
        optimizer,
        scheduler,
        start: float,
    ) -> bool:
        """Count dev ``metrics``, step the plateau schedule, log, save; True: stop early."""
        tc = self.cfg.train
        value = metrics[self.metric]
        improved = state.count_evaluation(value, self.higher_is_better)
        if scheduler is not None:  # plateau
            scheduler.step(value)
        state.elapsed_s = time.time() - start
        lr = optimizer.param_groups[0]["lr"]
        state.add_history(metrics, lr)
        self.log(
            f"update {state.step} (epoch {state.epoch + 1}): dev {self.metric} {value}"
            f"{' (best)' if improved else ''}; lr {lr:.1e}; "
            f"{state.elapsed_s / 60:.1f} min; {state.tokens / max(state.train_s, 1e-9):,.0f} train "
            "tokens/s"
        )
        if improved:
            self.save(translator, "best", state, optimizer, scheduler)
        self.save(translator, "last", state, optimizer, scheduler)
        if tc.average_checkpoints >= 2:
            self.averager().keep(translator, state.step, state.history)
        if tc.patience is not None and state.bad_evals >= tc.patience:
            self.log(f"early stopping: no dev improvement in {tc.patience} evaluations")
            return True
        return False

    def finish(
        self, translator: Translator, state: TrainerState, optimizer, scheduler, score_dev
    ) -> None:
        """The final ``last`` (and ``best`` and ``averaged``) of a run that ran to its end;
        ``score_dev()`` scores the weights ``translator`` holds."""
        self.save(translator, "last", state, optimizer, scheduler)
        if not (self.run_dir / "best").exists():
            self.save(translator, "best", state, optimizer, scheduler)
        if self.cfg.train.average_checkpoints >= 2:
            self.averager().average(translator, state.history, score_dev)
        skipped = f" ({state.skipped_updates} skipped, not finite)" if state.skipped_updates else ""
        self.log(
            f"done: best dev {self.metric} {state.best} at update {state.best_step}; "
            f"{state.step} updates{skipped} in {state.elapsed_s / 60:.1f} min; "
            f"checkpoints in {self.run_dir}"
        )
