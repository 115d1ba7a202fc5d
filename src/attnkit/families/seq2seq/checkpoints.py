"""A seq2seq run's counters (``trainer.json``) and checkpoints.

:func:`save_checkpoint` writes a checkpoint with the run's
:class:`~attnkit.training.state.TrainerState` (under ``state``, the names of
:data:`~attnkit.training.state.SEQ2SEQ`), and :func:`restore_seq2seq` reads ``last`` back for
``--resume``; :class:`RunCheckpoints` writes ``best`` and ``last``, keeps the best
evaluations' weights for averaging (``top``) and, at the end of a run, ``averaged``.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from pathlib import Path

import torch

from attnkit import checkpoint as ckpt
from attnkit.errors import CheckpointError
from attnkit.families.seq2seq.bundle import Seq2SeqBundle
from attnkit.families.seq2seq.config import ExperimentConfig
from attnkit.training import resume
from attnkit.training.averaging import CheckpointAverager
from attnkit.training.guard import check_weights
from attnkit.training.state import TrainerState, from_trainer, to_trainer


def save_checkpoint(
    bundle: Seq2SeqBundle,
    directory: Path,
    state: TrainerState,
    optimizer,
    scheduler,
    metric: str,
    backend_record: dict,
    resumable: bool = True,
    scaler: torch.amp.GradScaler | None = None,
) -> None:
    """Weights, tokenizers and config (``bundle.save``) with the trainer's counters, the dev
    metric and the backend; ``resumable`` adds what ``--resume`` needs: the optimizer, the plateau
    schedule's state and the RNG (``last`` has them; ``best`` is for decoding and reports, a third
    of the size), and fp16's loss ``scaler`` where there is one."""
    check_weights(bundle.model, f"update {state.step}: {directory} not written")
    trainer_state = to_trainer(state, metric=metric, backend=backend_record)
    if not resumable:
        bundle.save(directory, trainer_state)
        return
    info, tensors = resume.optimizer_to_tensors(optimizer)
    tensors["rng.torch"] = torch.get_rng_state()
    trainer_state["optimizer"] = info
    trainer_state["scheduler"] = (
        scheduler.state_dict()
        if isinstance(scheduler, torch.optim.lr_scheduler.ReduceLROnPlateau)
        else None
    )
    if scaler is not None:
        trainer_state["scaler"] = scaler.state_dict()
    bundle.save(directory, trainer_state, tensors)


class RunCheckpoints:
    """``best``, ``last``, ``top`` and ``averaged`` of a run directory, and the bookkeeping of
    each dev evaluation that decides them (in the process that writes the run directory)."""

    def __init__(
        self, cfg: ExperimentConfig, metric: str, higher_is_better: bool, log: Callable
    ) -> None:
        self.cfg, self.run_dir = cfg, cfg.run_dir
        self.metric, self.higher_is_better, self.log = metric, higher_is_better, log
        self.backend_record: dict = {}  # the backend training runs on: set once it is resolved
        self.scaler: torch.amp.GradScaler | None = None  # fp16's loss scaler, saved in ``last``

    def save(self, bundle: Seq2SeqBundle, name: str, state: TrainerState, optimizer, scheduler):
        """``RUN/name``; only ``last`` carries the optimizer, schedule and RNG for --resume."""
        save_checkpoint(
            bundle,
            self.run_dir / name,
            state,
            optimizer,
            scheduler,
            self.metric,
            self.backend_record,
            resumable=name == "last",
            scaler=self.scaler,
        )

    def averager(self) -> CheckpointAverager:
        n = self.cfg.train.average_checkpoints
        return CheckpointAverager(self.run_dir, n, self.metric, self.higher_is_better, self.log)

    def kept(self, bundle: Seq2SeqBundle, state: TrainerState) -> None:
        """After an evaluation's ``best`` and ``last``: its weights among the best kept for
        averaging (``top``)."""
        if self.cfg.train.average_checkpoints >= 2:
            self.averager().keep(bundle, state.step, state.history)

    def finish(
        self, bundle: Seq2SeqBundle, state: TrainerState, optimizer, scheduler, score_dev
    ) -> None:
        """The final ``last`` (and ``best`` and ``averaged``) of a run that ran to its end;
        ``score_dev()`` scores the weights ``bundle`` holds."""
        self.save(bundle, "last", state, optimizer, scheduler)
        if not (self.run_dir / "best").exists():
            self.save(bundle, "best", state, optimizer, scheduler)
        if self.cfg.train.average_checkpoints >= 2:
            self.averager().average(bundle, state.history, score_dev)


def restore_seq2seq(last: Path, optimizer, scheduler, metric: str) -> TrainerState:
    """Counters, optimizer, plateau schedule and RNG of a seq2seq run's ``last``,
    each checked before it is loaded."""
    json_path, tensors_path = last / "trainer.json", last / "trainer.safetensors"
    state, info = from_trainer(
        ckpt.read_json(json_path),
        str(json_path),
        ("optimizer",),
        ("scheduler", "metric", "backend", "scaler"),
    )
    tensors = ckpt.read_tensors(tensors_path)
    resume.check_tensor_names(tensors, tensors_path)
    check_history(state.history, metric, f"{json_path}: state.history")
    plateau = info.get("scheduler") if scheduler is not None else None
    if plateau:
        plateau = resume.check_scheduler_state(scheduler, plateau, f"{json_path}: scheduler")
    resume.restore_optimizer(optimizer, info["optimizer"], tensors, json_path, tensors_path)
    if plateau:
        scheduler.load_state_dict(plateau)
    resume.restore_rng(tensors, tensors_path)
    return state


def check_history(history: list, metric: str, where: str) -> None:
    """Each evaluation names its update and its dev score: checkpoint averaging ranks them by it."""
    for i, entry in enumerate(history):
        ok = isinstance(entry, dict) and isinstance(entry.get("step"), int)
        ok = ok and isinstance(entry.get("dev"), dict)
        score = entry["dev"].get(metric) if ok else None
        number = isinstance(score, (int, float)) and not isinstance(score, bool)
        if not (number and math.isfinite(score)):
            raise CheckpointError(
                f"{where}[{i}]: expected {{'step': N, 'dev': {{{metric!r}: score}}, ...}}"
            )


def restore_scaler(last: Path, scaler: torch.amp.GradScaler) -> None:
    """fp16's loss scale and its growth count from ``last`` (a run that saved none, one begun in
    another precision, starts the scaler afresh)."""
    json_path = last / "trainer.json"
    saved = ckpt.read_json(json_path).get("scaler")
    if saved is None:
        return
    if not isinstance(saved, dict) or not isinstance(saved.get("scale"), int | float):
        raise CheckpointError(f"{json_path}: scaler: expected a loss scaler's state")
    scaler.load_state_dict(saved)
