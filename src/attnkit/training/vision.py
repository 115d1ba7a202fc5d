"""Training for the visual attention family.

An experiment file has ``family: vision`` (:mod:`attnkit.training.vision_config`).
:func:`train_vision` (the CLI calls it) trains, keep ``OUT/best`` (lowest dev error) and
  ``OUT/last`` checkpoints, resume from ``OUT/last`` (its trainer state checked
  first, :mod:`attnkit.training.vision_checkpoint`); steps with a NaN/inf loss or gradient norm
  are skipped; TensorBoard event files in ``OUT/tensorboard``
  (:mod:`attnkit.training.tensorboard`);

Evaluation is :mod:`attnkit.evaluation.vision`; the pictures of where a model looks,
:mod:`attnkit.explain.vision_plot`; loading a checkpoint,
:func:`attnkit.training.vision_checkpoint.load_vision_model`.

Data lives on the training device as uint8 and is cut into batches there
(:mod:`attnkit.training.vision_epoch`); the training images of translated / cluttered / strip
tasks are redrawn every epoch (``data.resample``) in a background thread.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import closing
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
from torch import nn

from attnkit import checkpoint as ckpt
from attnkit.config import apply_overrides
from attnkit.data.tasks.vision import VisionData
from attnkit.device import resolve_device
from attnkit.errors import CheckpointError, ConfigError
from attnkit.training import distributed, resume_config, rundir
from attnkit.training import tensorboard as tb
from attnkit.training import vision_checkpoint as vckpt
from attnkit.training.guard import UpdateGuard
from attnkit.training.state import TrainerState
from attnkit.training.vision_config import TrainConfig, VisionConfig, parse_config
from attnkit.training.vision_epoch import (
    EpochStop,
    dev_figures,
    evaluate_split,
    log,
    train_epoch,
)
from attnkit.training.vision_families import MODEL_TYPES, Family

__all__ = ["train_vision"]


def train_vision(
    config: dict,
    output_dir: Path | None = None,
    resume: bool = False,
    source: str = "config",
    overwrite: bool = False,
    overrides: Sequence[str] | None = None,
) -> Path:
    """Train the model of ``config`` (the parsed YAML); returns the best checkpoint dir.

    Writes ``OUT/best`` (lowest dev error so far) and ``OUT/last`` (end of
    the latest epoch) where OUT is ``output_dir`` or the config's ``output_dir``.
    ``resume=True`` continues from ``OUT/last``; a
    fresh run refuses an OUT holding checkpoints unless ``overwrite``. OUT is
    locked while training; SIGINT/SIGTERM save ``OUT/last`` after the current
    update (a resumed run goes on from that batch) and raise TrainingInterrupted.

    ``overrides`` (the command line's ``--set KEY=VALUE``) are applied to ``config``; given
    (a list, even empty), a resumed run goes on with the config saved in ``OUT/last`` and takes
    from ``config`` only the keys they name (:func:`attnkit.training.resume_config.request`).
    Without them, ``config`` is all the caller asks for. Either way a resumed run refuses a
    change it cannot honour (the model, the data, the optimizer) in one line.
    """
    cfg = parse_config(apply_overrides(config, overrides or ()), source)
    if distributed.world_size() > 1:  # N copies of one run would fight over its directory
        raise ConfigError(
            f"{source}: data-parallel training under torchrun is for seq2seq "
            "experiments; train a vision model with attnkit train CONFIG"
        )
    out = Path(output_dir) if output_dir is not None else Path(cfg.output_dir)
    if resume and overrides is not None:
        cfg = _config_to_resume(cfg, out / "last", overrides, source)
    say = lambda m: log(cfg.train, m)  # noqa: E731
    with (
        rundir.claim_run_dir(out, resume, overwrite, say),
        rundir.StopSignals() as signals,
        tb.Board(out / rundir.LOG_NAME, cfg.train.tensorboard, say, "images") as board,
    ):
        run = _Run.start(cfg, out, resume, source, signals, board)
        return run.train()


def _plan(cfg: TrainConfig, state: TrainerState, epoch_seconds: list[float]) -> int:
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


@dataclass
class _Run:
    """One training run of a vision model: what every epoch of it reads and writes."""

    cfg: VisionConfig
    out: Path
    family: Family
    model: nn.Module
    optimizer: torch.optim.Optimizer
    state: TrainerState
    signals: rundir.StopSignals
    board: tb.Board
    device: torch.device
    deadline: float | None = None  # time.perf_counter() when the budget is spent

    @classmethod
    def start(cls, cfg, out: Path, resume: bool, source: str, signals, board) -> _Run:
        """Seeded model and optimizer, or those of ``out/last`` with ``resume``."""
        t_cfg = cfg.train
        if t_cfg.threads:
            torch.set_num_threads(t_cfg.threads)
        device = resolve_device(t_cfg.device)
        if device.type == "cuda":
            torch.backends.cudnn.benchmark = True
        torch.manual_seed(t_cfg.seed)
        family = MODEL_TYPES[cfg.model_type]
        model = family.build(cfg.model).to(device)
        optimizer = torch.optim.Adam(
            model.parameters(),
            lr=t_cfg.lr,
            weight_decay=t_cfg.weight_decay,
            fused=device.type == "cuda",
        )
        state = TrainerState(planned_epochs=t_cfg.epochs)
        if resume:
            state = _resumed_state(cfg, out, source, model, optimizer)
        return cls(cfg, out, family, model, optimizer, state, signals, board, device)

    def train(self) -> Path:
        """Epochs until the planned ones, patience or the time budget run out; ``out/best``."""
        cfg, t_cfg, state = self.cfg, self.cfg.train, self.state
        self.board.start(state.step)
        weights = sum(t.numel() * t.element_size() for t in self.model.state_dict().values())
        rundir.check_space(self.out, 3 * weights)  # the weights and Adam's two moments
        resumed = (
            vckpt.interrupted_order(self.out / "last", self.device) if state.batches_done else None
        )
        stop = EpochStop(lambda: self.signals.requested, resumed)
        family = self.family
        step = torch.compile(family.train_step) if t_cfg.compiled else family.train_step
        data = VisionData(cfg.data)
        dev_split = data.split("dev")
        dev = family.to_device(dev_split, self.device)
        self.deadline = (
            None
            if t_cfg.max_minutes is None
            else time.perf_counter() + t_cfg.max_minutes * 60 - state.elapsed_s
        )
        epoch_seconds: list[float] = []
        guard = UpdateGuard(t_cfg.max_bad_updates)  # counts skipped steps in a row across epochs
        parameters = sum(p.numel() for p in self.model.parameters())
        log(
            t_cfg,
            f"training {cfg.model_type} on {cfg.data.task} ({self.device}), "
            f"{parameters:,} parameters, {data.describe()}",
        )
        with closing(self._training_sets(data, stop)) as epochs:
            for began, train in epochs:
                stats = train_epoch(
                    step,
                    self.model,
                    self.optimizer,
                    cfg,
                    train,
                    state,
                    self.deadline,
                    guard,
                    stop,
                    self.board,
                )
                if stop.interrupted:
                    state.elapsed_s += time.perf_counter() - began
                    self._save_interrupted(stop)
                state.batches_done, stop.order = 0, None
                self._end_epoch(stats, dev, dev_split, began, epoch_seconds)
        log(
            t_cfg,
            f"stopped ({state.stopped or 'done'}) after {state.epoch} epochs, "
            f"{state.elapsed_s:.0f}s; best dev error {_best(state):.2f}% at epoch "
            f"{state.best_epoch}; checkpoints in {self.out}",
        )
        return self.out / "best"

    def _training_sets(self, data: VisionData, stop: EpochStop):
        """(start time, training set on the device) of each epoch to train, until the planned
        epochs are done or ``state.stopped``; the next epoch's images are drawn meanwhile."""
        state = self.state
        redraw = self.cfg.data.resample and self.cfg.data.task != "mnist"  # else one set for all
        train = None
        with ThreadPoolExecutor(max_workers=1) as pool:
            pending = pool.submit(data.train_split, state.epoch)
            try:
                while state.epoch < state.planned_epochs and not state.stopped:
                    if self.signals.requested:  # between epochs: ``last`` is saved again as it is
                        self._save_interrupted(stop)
                    began = time.perf_counter()
                    if train is None or redraw:
                        pending = pending or pool.submit(data.train_split, state.epoch)
                        train = self.family.to_device(pending.result(), self.device)
                        more = redraw and state.epoch + 1 < state.planned_epochs
                        # drawn while this epoch trains
                        pending = pool.submit(data.train_split, state.epoch + 1) if more else None
                    yield began, train
            finally:
                if pending is not None:
                    pending.cancel()

    def _end_epoch(self, stats: dict, dev, dev_split, began: float, epoch_seconds: list) -> None:
        """Score dev, count, plan, log and save after an epoch; sets ``state.stopped`` to end."""
        cfg, t_cfg, state, family = self.cfg, self.cfg.train, self.state, self.family
        dev_stats = evaluate_split(
            family, self.model, dev, cfg.model, t_cfg.eval_batch_size, family.dev_mc(cfg.model)
        )
        self.board.scalars(state.step, dev_stats, "dev")
        self.board.pictures(state.step, dev_figures(family, self.model, dev_split, cfg.model))
        state.epoch += 1
        seconds = time.perf_counter() - began
        state.elapsed_s += seconds
        epoch_seconds.append(seconds)
        improved = state.count_evaluation(dev_stats["error_pct"], higher_is_better=False)
        state.history.append(
            {
                "epoch": state.epoch,
                **stats,
                "dev_error_pct": dev_stats["error_pct"],
                "seconds": round(seconds, 3),
            }
        )
        state.planned_epochs = _plan(t_cfg, state, epoch_seconds)
        n_skipped = stats["skipped_updates"]
        skipped = f"  {n_skipped} steps skipped" if n_skipped else ""
        log(
            t_cfg,
            f"epoch {state.epoch}/{state.planned_epochs}  loss {stats['train_loss']:.4f}  "
            f"train acc {100 * stats['train_accuracy']:.2f}%  dev error "
            f"{dev_stats['error_pct']:.2f}%{' *' if improved else ''}  lr {stats['lr']:.2e}  "
            f"{seconds:.1f}s ({stats['images'] / max(seconds, 1e-9):.0f} img/s){skipped}",
        )
        state.stopped = self._stop_reason()
        if improved:
            vckpt.save(self.out / "best", self.model, self.optimizer, cfg, state, resumable=False)
        vckpt.save(self.out / "last", self.model, self.optimizer, cfg, state)

    def _stop_reason(self) -> str:
        """Why training ends after this epoch: budget, patience, epochs, or "" (it goes on)."""
        t_cfg, state = self.cfg.train, self.state
        if self.deadline is not None and time.perf_counter() > self.deadline:
            return "budget"
        if t_cfg.patience is not None and state.bad_evals >= t_cfg.patience:
            return "patience"
        if state.epoch >= state.planned_epochs:
            return "epochs" if state.epoch >= t_cfg.epochs else "budget"
        return ""

    def _save_interrupted(self, stop: EpochStop) -> None:
        """Save ``out/last`` where a signal stopped training, and raise TrainingInterrupted."""
        state, last = self.state, self.out / "last"
        order = stop.order if state.batches_done else None
        vckpt.save(last, self.model, self.optimizer, self.cfg, state, order)
        where = f"step {state.step} (epoch {state.epoch + 1}, batch {state.batches_done})"
        raise self.signals.interrupted(last, where)


def _best(state: TrainerState) -> float:
    """The lowest dev error % so far (inf before any epoch is scored)."""
    return float("inf") if state.best is None else state.best


def _tell(line: str) -> None:
    """A line about what a resumed run goes on with: on stderr, as the epochs' lines, but also
    without ``train.verbose`` (it is not an epoch's summary)."""
    print(line, file=sys.stderr)


def _saved_config(last: Path) -> VisionConfig:
    if not last.is_dir():
        raise CheckpointError(f"{last}: nothing to resume (train without --resume first)")
    return parse_config(ckpt.read_config(last), str(last), user=False)


def _config_to_resume(
    asked: VisionConfig, last: Path, overrides: Sequence[str], source: str
) -> VisionConfig:
    """The config saved in ``last`` with the keys ``overrides`` name taken from ``asked``; what
    else of ``source`` differs is said in one line."""
    merged, note = resume_config.request(
        _saved_config(last).to_dict(),
        asked.to_dict(),
        overrides,
        resume_config.VISION,
        last,
        source,
    )
    if note:
        _tell(note)
    return parse_config(merged, f"{last} with --set", user=False)


def _resumed_state(cfg: VisionConfig, out: Path, source: str, model, optimizer) -> TrainerState:
    """Load ``out/last`` into ``model`` and ``optimizer``, once ``cfg`` changes nothing resume
    cannot honour (each change is logged); its counters, to go on from."""
    last = out / "last"
    saved = _saved_config(last)
    lines = resume_config.changes(saved.to_dict(), cfg.to_dict(), resume_config.VISION, last)
    for line in lines:
        _tell(line)
    state = vckpt.restore(last, model, optimizer)
    state.stopped, state.planned_epochs = "", cfg.train.epochs  # the config may ask for more now
    return state
