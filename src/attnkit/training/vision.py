"""Training, evaluation and pictures for the visual attention family.

An experiment file has ``family: vision`` and three sections::

    family: vision
    data:  {task: cluttered, canvas: 60, ...}     -> DataConfig
    model: {type: ram, glimpses: 8, ...}          -> RAMConfig | ReaderConfig | PoolingConfig
    train: {epochs: 100, batch_size: 128, ...}    -> TrainConfig

``model.type`` picks the model (:data:`MODEL_TYPES`, a registry by name, in
:mod:`attnkit.training.vision_families`) and with it the valid keys of the section. Unknown keys
anywhere are rejected with the list of valid ones.

Public entry points (the CLI calls these):

* :func:`train_vision` -- train, keep ``OUT/best`` (lowest dev error) and
  ``OUT/last`` checkpoints, resume from ``OUT/last`` (its trainer state checked
  first); steps with a NaN/inf loss or gradient norm are skipped; TensorBoard
  event files in ``OUT/tensorboard`` (:mod:`attnkit.training.tensorboard`);
* :func:`evaluate_vision` -- error % on the test (or dev) split;
* :func:`plot_vision` -- PNG + GIF of where the model looks on test image N.

Data lives on the training device as uint8 and is cut into batches there;
the training images of translated / cluttered / strip tasks are redrawn
every epoch (``data.resample``) in a background thread.
"""

from __future__ import annotations

import math
import sys
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np
import torch
from torch import Tensor, nn
from tqdm import tqdm

from attnkit import checkpoint as ckpt
from attnkit.config import above, at_least, check_values, from_dict, not_below
from attnkit.data.tasks.vision import DataConfig, Split, VisionData
from attnkit.device import resolve_device
from attnkit.errors import CheckpointError, ConfigError
from attnkit.training import distributed, resume, rundir
from attnkit.training import tensorboard as tb
from attnkit.training.guard import UpdateGuard, check_weights
from attnkit.training.vision_families import MODEL_TYPES, DeviceSplit, Family

FAMILY = "vision"


# ---------------------------------------------------------------- configuration


@dataclass
class TrainConfig:
    """``train:`` how to optimise, when to stop, where to write."""

    epochs: int = 50
    """Most epochs (passes over the training images) to run."""
    batch_size: int = 128
    """Images per optimiser step."""
    eval_batch_size: int = 1000
    """Images per forward pass when measuring dev/test error."""
    lr: float = 1e-3
    """Adam learning rate at the start of the schedule."""
    lr_schedule: str = "cosine"
    """cosine: decay to lr * min_lr_ratio over the planned epochs; step: multiply by lr_gamma every
    lr_step_epochs; constant."""
    min_lr_ratio: float = 0.01
    """Cosine floor, as a fraction of lr."""
    lr_step_epochs: int = 20
    """Step schedule: epochs between decays."""
    lr_gamma: float = 0.5
    """Step schedule: decay factor."""
    warmup_epochs: float = 0.0
    """Linear warm-up from 0 to lr over this many epochs (fractions allowed)."""
    weight_decay: float = 0.0
    """Adam weight decay (L2)."""
    grad_clip: float | None = 5.0
    """Clip the global gradient norm to this value (null: no clipping)."""
    max_bad_updates: int = 20
    """Steps with a NaN/inf loss or gradient norm are skipped; this many in a row end the run."""
    patience: int | None = 20
    """Early stopping: stop after this many epochs without a lower dev error (null: never)."""
    max_minutes: float | None = None
    """Wall-clock budget for training (null: none); training stops when it is spent."""
    fit_schedule_to_budget: bool = True
    """With max_minutes: shorten the planned epochs (and the LR schedule) to what the budget
    allows."""
    device: str = "auto"
    """auto (CUDA when available), cpu or cuda."""
    seed: int = 0
    """Seed of the model initialisation and of the batch order."""
    num_threads: int | None = None
    """CPU threads for torch (null or 0: torch's default)."""
    compile: bool = False
    """torch.compile the training step (fewer, fused kernels; the first steps compile for a
    minute)."""
    output_dir: str = "runs/vision"
    """Run directory (holds best/ and last/) when the caller gives none."""
    progress: bool = True
    """Show a tqdm progress bar (loss, accuracy, images/s) on stderr."""
    verbose: bool = True
    """Print one summary line per epoch on stderr."""
    tensorboard: bool = True
    """TensorBoard event files in OUT/tensorboard: scalars, dev metrics, attention pictures."""

    CHOICES = {"lr_schedule": ("cosine", "step", "constant"), "device": ("auto", "cpu", "cuda")}
    RULES = {
        "epochs": at_least(1),
        "batch_size": at_least(1),
        "eval_batch_size": at_least(1),
        "lr": above(0),
        "min_lr_ratio": (lambda v: 0 <= v <= 1, "in [0, 1]"),
        "lr_step_epochs": at_least(1),
        "lr_gamma": above(0),
        "warmup_epochs": not_below(0),
        "weight_decay": not_below(0),
        "grad_clip": not_below(0, null=True),
        "patience": at_least(1, null=True),
        "max_minutes": above(0, null=True),
        "num_threads": (
            lambda v: v is None or v >= 0,
            "at least 1, or 0 or null for torch's default",
        ),
        "max_bad_updates": at_least(1),
    }

    def validate(self, where: str) -> None:
        check_values(self, where, self.RULES)


@dataclass
class VisionConfig:
    data: DataConfig
    model: object  # the dataclass of MODEL_TYPES[model_type]
    model_type: str
    train: TrainConfig

    def to_dict(self) -> dict:
        return {
            "family": FAMILY,
            "data": asdict(self.data),
            "model": {"type": self.model_type, **asdict(self.model)},
            "train": asdict(self.train),
        }


def parse_config(data: dict, source: str = "config") -> VisionConfig:
    """A parsed YAML mapping -> :class:`VisionConfig`; ConfigError naming ``source`` and the key."""
    if not isinstance(data, dict):
        raise ConfigError(f"{source}: the top level must be a mapping of sections")
    valid = ("family", "data", "model", "train")
    unknown = sorted(set(data) - set(valid), key=repr)  # YAML keys may be numbers or null
    if unknown:
        raise ConfigError(
            f"{source}: unknown key{'s' if len(unknown) > 1 else ''} "
            f"{', '.join(map(repr, unknown))}; valid keys: {', '.join(valid)}"
        )
    if data.get("family", FAMILY) != FAMILY:
        raise ConfigError(
            f"{source}: family: {data.get('family')!r} is not a vision config (family: vision)"
        )
    model = dict(data.get("model") or {})
    model_type = model.pop("type", None)
    if model_type not in MODEL_TYPES:
        raise ConfigError(
            f"{source}: model.type: {model_type!r} is not one of {', '.join(MODEL_TYPES)}"
        )
    family = MODEL_TYPES[model_type]
    cfg = VisionConfig(
        data=from_dict(DataConfig, data.get("data"), f"{source}: data"),
        model=from_dict(family.config_cls, model, f"{source}: model"),
        model_type=model_type,
        train=from_dict(TrainConfig, data.get("train"), f"{source}: train"),
    )
    if cfg.data.task not in family.tasks:
        raise ConfigError(
            f"{source}: model.type {model_type!r} reads data.task {' or '.join(family.tasks)}, "
            f"not {cfg.data.task!r}"
        )
    return cfg


# ---------------------------------------------------------------- schedule


def learning_rate(cfg: TrainConfig, progress: float, planned_epochs: int) -> float:
    """LR at ``progress`` epochs (fractional) into a run planned for ``planned_epochs``."""
    if cfg.warmup_epochs > 0 and progress < cfg.warmup_epochs:
        return cfg.lr * max(progress, 1e-3) / cfg.warmup_epochs
    if cfg.lr_schedule == "constant":
        return cfg.lr
    if cfg.lr_schedule == "step":
        return cfg.lr * cfg.lr_gamma ** int(progress // cfg.lr_step_epochs)
    span = max(planned_epochs - cfg.warmup_epochs, 1e-9)
    frac = min(max(progress - cfg.warmup_epochs, 0.0) / span, 1.0)
    floor = cfg.lr * cfg.min_lr_ratio
    return floor + (cfg.lr - floor) * 0.5 * (1.0 + math.cos(math.pi * frac))


# ---------------------------------------------------------------- state


@dataclass
class TrainerState:
    """What ``trainer.json`` holds: enough to resume and to report."""

    epoch: int = 0  # epochs completed
    batches_done: int = 0  # batches of the next epoch already trained (a signal stopped it)
    step: int = 0
    planned_epochs: int = 0
    best_dev_error: float = float("inf")
    best_epoch: int = 0
    bad_epochs: int = 0
    elapsed_s: float = 0.0  # training wall time, summed over resumed runs
    stopped: str = ""  # why training ended: "", "epochs", "patience", "budget"
    skipped_updates: int = 0  # steps whose loss or gradient norm was not finite: no update applied
    history: list = field(default_factory=list)


def _save(
    directory: Path,
    model: nn.Module,
    optimizer,
    cfg: VisionConfig,
    state: TrainerState,
    epoch_order: Tensor | None = None,
) -> None:
    check_weights(model, f"epoch {state.epoch} (step {state.step}): {directory} not written")
    info, tensors = resume.optimizer_to_tensors(optimizer)
    if epoch_order is not None:  # an interrupted epoch: its image order, to go on with
        tensors["epoch_order"] = epoch_order
    tensors["rng.torch"] = torch.get_rng_state()
    if torch.cuda.is_available() and torch.cuda.is_initialized():
        tensors["rng.cuda"] = torch.cuda.get_rng_state()
    trainer = {**asdict(state), "optimizer": info}
    if trainer["best_dev_error"] == float("inf"):
        trainer["best_dev_error"] = None
    ckpt.write_checkpoint(directory, FAMILY, model.state_dict(), cfg.to_dict(), trainer, tensors)


def _restore(directory: Path, model: nn.Module, optimizer) -> TrainerState:
    """Weights, optimizer, counters and RNG of ``directory``, each checked before it is loaded."""
    ckpt.read_meta(directory, FAMILY)
    ckpt.load_model_state(model, directory)
    json_path, tensors_path = directory / "trainer.json", directory / "trainer.safetensors"
    trainer = resume.check_sections(
        ckpt.read_json(json_path),
        json_path,
        ("optimizer",),
        tuple(TrainerState.__dataclass_fields__),
    )
    tensors = ckpt.read_tensors(tensors_path)
    resume.check_tensor_names(tensors, tensors_path, extra=("epoch_order",))
    counters = {k: v for k, v in trainer.items() if k != "optimizer"}
    if counters.get("best_dev_error", 0) is None:  # saved as null while no epoch has been scored
        del counters["best_dev_error"]
    state = resume.dataclass_from_json(TrainerState, counters, str(json_path))
    resume.restore_optimizer(optimizer, trainer["optimizer"], tensors, json_path, tensors_path)
    resume.restore_rng(tensors, tensors_path)
    return state


def _save_interrupted(
    out: Path,
    model: nn.Module,
    optimizer,
    cfg: VisionConfig,
    state: TrainerState,
    stop: EpochStop,
    signals: rundir.StopSignals,
) -> None:
    """Save ``out/last`` where a signal stopped training, and raise TrainingInterrupted."""
    _save(out / "last", model, optimizer, cfg, state, stop.order if state.batches_done else None)
    where = f"step {state.step} (epoch {state.epoch + 1}, batch {state.batches_done})"
    raise signals.interrupted(out / "last", where)


def _interrupted_order(directory: Path, device: torch.device) -> Tensor:
    """The image order of the epoch a signal interrupted, saved with ``last``."""
    path = directory / "trainer.safetensors"
    order = (ckpt.read_tensors(path) or {}).get("epoch_order")
    if order is None:
        raise CheckpointError(f"{path}: an interrupted epoch without its epoch_order")
    if (
        order.dtype != torch.int64
        or order.dim() != 1
        or bool((order < 0).any())
        or order.unique().numel() != order.numel()
    ):
        raise CheckpointError(
            f"{path}: epoch_order must be distinct image indices (int64, 1-D), "
            f"got {order.dtype} {tuple(order.shape)}"
        )
    return order.to(device)


# ---------------------------------------------------------------- loops


def _log(cfg: TrainConfig, message: str) -> None:
    if cfg.verbose:
        tqdm.write(message, file=sys.stderr)


def _batches(
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
    batches = list(order.split(batch_size))
    if drop_last and len(batches) > 1 and len(batches[-1]) < batch_size:
        batches.pop()  # one batch shape: a compiled step is not recompiled for the remainder
    return batches


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
        for idx in _batches(len(split), batch_size, split.images.device, shuffle=False):
            correct += family.count_correct(model, split.batch(idx), model_cfg, mc_samples)
    n, right = len(split), float(correct)
    # from the counts: 410 wrong of 10,000 is exactly 4.1, where 100 * (1 - 0.959) is
    # 4.100000000000001
    return {
        "images": n,
        "accuracy": right / max(n, 1),
        "error_pct": 100.0 * (n - right) / max(n, 1),
    }


@dataclass
class EpochStop:
    """How an epoch may be cut short by a signal, and resumed where it was."""

    requested: Callable[[], bool] = lambda: False
    order: Tensor | None = None  # (N,) the epoch's image order: given to resume, set by the epoch
    interrupted: bool = False


def _train_epoch(
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
    batches = _batches(
        len(split),
        t_cfg.batch_size,
        split.images.device,
        shuffle=True,
        drop_last=t_cfg.compile,
        order=stop.order,
    )
    stop.order = torch.cat(batches) if batches else None
    first, lr = state.batches_done, learning_rate(t_cfg, state.epoch, state.planned_epochs)
    loss_sum = torch.zeros((), device=split.images.device)
    correct = torch.zeros((), device=split.images.device)
    seen, start = 0, time.perf_counter()
    board.window.restart()
    bar = tqdm(
        batches[first:],
        desc=f"epoch {state.epoch + 1}/{state.planned_epochs}",
        unit="batch",
        leave=False,
        disable=not t_cfg.progress,
        file=sys.stderr,
        dynamic_ncols=True,
    )
    for i, idx in enumerate(bar, start=first):
        if stop.requested():
            stop.interrupted = True
            break
        lr = learning_rate(t_cfg, state.epoch + i / len(batches), state.planned_epochs)
        for group in optimizer.param_groups:
            group["lr"] = lr
        loss, reported, batch_correct = step(model, split.batch(idx), cfg.model)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        state.step += 1
        state.batches_done = i + 1
        if guard.step(optimizer, model.parameters(), loss.detach(), t_cfg.grad_clip, state.step):
            state.skipped_updates += 1
            _log(
                t_cfg,
                f"step {state.step}: skipped, not finite ({guard.last_reason}); "
                f"{guard.in_a_row} in a row, {state.skipped_updates} in all",
            )
        else:
            loss_sum += reported.detach() * len(idx)
            correct += batch_correct
            seen += len(idx)
            board.window.add(reported.detach() * len(idx), batch_correct, len(idx))
        if state.step % tb.EVERY == 0:
            board.train(state.step, lr, state.skipped_updates)
        if t_cfg.progress and seen and (i % 20 == 0 or i == len(batches) - 1):
            rate = seen / max(time.perf_counter() - start, 1e-9)
            bar.set_postfix(
                loss=f"{float(loss_sum) / seen:.4f}",
                acc=f"{100 * float(correct) / seen:.2f}%",
                img_s=f"{rate:.0f}",
                lr=f"{lr:.2e}",
            )
        if deadline is not None and time.perf_counter() > deadline:
            break
    bar.close()
    if board.window.pending:  # the steps since the last log: before the dev evaluation
        board.train(state.step, lr, state.skipped_updates)
    return {
        "train_loss": float(loss_sum) / max(seen, 1),
        "train_accuracy": float(correct) / max(seen, 1),
        "images": seen,
        "lr": lr,
        "skipped_updates": state.skipped_updates - skipped_before,
    }


def _dev_figures(family: Family, model: nn.Module, dev: Split, model_cfg):
    """(tag, figure) of where the model looks on each of the first dev images."""
    model.eval()
    with tb.forked_rng(next(model.parameters()).device):
        for i in range(min(tb.EXAMPLES, len(dev.images))):
            yield f"attention/dev{i}", family.figure(model, dev.images[i], dev.labels[i], model_cfg)


def _plan(cfg: TrainConfig, state: TrainerState, epoch_seconds: list[float]) -> int:
    """Planned epochs: the config's, cut to the epochs the remaining budget can finish.

    Equal to ``state.epoch`` when not even one more epoch fits: training stops
    there rather than start an epoch the budget would cut short.
    """
    if cfg.compile:
        epoch_seconds = epoch_seconds[1:]  # the first epoch includes compiling
    if cfg.max_minutes is None or not cfg.fit_schedule_to_budget or not epoch_seconds:
        return cfg.epochs
    typical = float(np.median(epoch_seconds[1:] if len(epoch_seconds) > 1 else epoch_seconds))
    remaining = cfg.max_minutes * 60.0 - state.elapsed_s
    return min(cfg.epochs, state.epoch + int(remaining // max(typical, 1e-6)))


def train_vision(
    config: dict,
    output_dir: Path | None = None,
    resume: bool = False,
    source: str = "config",
    overwrite: bool = False,
) -> Path:
    """Train the model of ``config`` (the parsed YAML, overrides applied); returns the best
    checkpoint dir.

    Writes ``OUT/best`` (lowest dev error so far) and ``OUT/last`` (end of
    the latest epoch) where OUT is ``output_dir`` or ``train.output_dir``.
    ``resume=True`` continues from ``OUT/last`` (its config must match); a
    fresh run refuses an OUT holding checkpoints unless ``overwrite``. OUT is
    locked while training; SIGINT/SIGTERM save ``OUT/last`` after the current
    update (a resumed run goes on from that batch) and raise TrainingInterrupted.
    """
    cfg = parse_config(config, source)
    if distributed.world_size() > 1:  # N copies of one run would fight over its directory
        raise ConfigError(
            f"{source}: data-parallel training under torchrun is for seq2seq "
            "experiments; train a vision model with attnkit train CONFIG"
        )
    out = Path(output_dir) if output_dir is not None else Path(cfg.train.output_dir)
    log = lambda m: _log(cfg.train, m)  # noqa: E731
    with (
        rundir.claim_run_dir(out, resume, overwrite, log),
        rundir.StopSignals() as signals,
        tb.Board(out / rundir.LOG_NAME, cfg.train.tensorboard, log, "images") as board,
    ):
        return _train_vision(cfg, out, resume, source, signals, board)


def _train_vision(
    cfg: VisionConfig,
    out: Path,
    resume: bool,
    source: str,
    signals: rundir.StopSignals,
    board: tb.Board,
) -> Path:
    t_cfg = cfg.train
    if t_cfg.num_threads:
        torch.set_num_threads(t_cfg.num_threads)
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
        if not (out / "last").is_dir():
            raise CheckpointError(
                f"{out / 'last'}: nothing to resume (train without --resume first)"
            )
        saved = ckpt.read_config(out / "last")
        if parse_config(saved, str(out / "last")).model != cfg.model:
            raise CheckpointError(
                f"{out / 'last'}: the checkpoint's model config differs from {source}"
            )
        state = _restore(out / "last", model, optimizer)
        state.stopped, state.planned_epochs = (
            "",
            t_cfg.epochs,
        )  # the config may ask for more epochs now
    board.start(state.step)
    weights = sum(t.numel() * t.element_size() for t in model.state_dict().values())
    rundir.check_space(out, 3 * weights)  # the weights and Adam's two moments
    resumed_order = _interrupted_order(out / "last", device) if state.batches_done else None
    stop = EpochStop(lambda: signals.requested, resumed_order)
    step = torch.compile(family.train_step) if t_cfg.compile else family.train_step
    data = VisionData(cfg.data)
    dev_split = data.split("dev")
    dev = family.to_device(dev_split, device)
    deadline = (
        None
        if t_cfg.max_minutes is None
        else time.perf_counter() + t_cfg.max_minutes * 60 - state.elapsed_s
    )
    epoch_seconds: list[float] = []
    guard = UpdateGuard(t_cfg.max_bad_updates)  # counts skipped steps in a row across epochs
    _log(
        t_cfg,
        f"training {cfg.model_type} on {cfg.data.task} ({device}), "
        f"{sum(p.numel() for p in model.parameters()):,} parameters, {data.describe()}",
    )
    redraw = cfg.data.resample and cfg.data.task != "mnist"  # else one training set for every epoch
    train = None
    with ThreadPoolExecutor(max_workers=1) as pool:
        pending = pool.submit(data.train_split, state.epoch)
        while state.epoch < state.planned_epochs:
            if signals.requested:  # between epochs: ``last`` is saved again as it is
                _save_interrupted(out, model, optimizer, cfg, state, stop, signals)
            began = time.perf_counter()
            if train is None or redraw:
                pending = pending or pool.submit(data.train_split, state.epoch)
                train = family.to_device(pending.result(), device)
                more = redraw and state.epoch + 1 < state.planned_epochs
                pending = (
                    pool.submit(data.train_split, state.epoch + 1) if more else None
                )  # drawn while training
            stats = _train_epoch(
                step, model, optimizer, cfg, train, state, deadline, guard, stop, board
            )
            if stop.interrupted:
                state.elapsed_s += time.perf_counter() - began
                _save_interrupted(out, model, optimizer, cfg, state, stop, signals)
            state.batches_done, stop.order = 0, None
            dev_stats = evaluate_split(
                family, model, dev, cfg.model, t_cfg.eval_batch_size, family.dev_mc(cfg.model)
            )
            board.scalars(state.step, dev_stats, "dev")
            board.pictures(state.step, _dev_figures(family, model, dev_split, cfg.model))
            state.epoch += 1
            seconds = time.perf_counter() - began
            state.elapsed_s += seconds
            epoch_seconds.append(seconds)
            improved = dev_stats["error_pct"] < state.best_dev_error
            if improved:
                state.best_dev_error, state.best_epoch, state.bad_epochs = (
                    dev_stats["error_pct"],
                    state.epoch,
                    0,
                )
            else:
                state.bad_epochs += 1
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
            _log(
                t_cfg,
                f"epoch {state.epoch}/{state.planned_epochs}  loss {stats['train_loss']:.4f}  "
                f"train acc {100 * stats['train_accuracy']:.2f}%  dev error "
                f"{dev_stats['error_pct']:.2f}%{' *' if improved else ''}  lr {stats['lr']:.2e}  "
                f"{seconds:.1f}s ({stats['images'] / max(seconds, 1e-9):.0f} img/s){skipped}",
            )
            if deadline is not None and time.perf_counter() > deadline:
                state.stopped = "budget"
            elif t_cfg.patience is not None and state.bad_epochs >= t_cfg.patience:
                state.stopped = "patience"
            elif state.epoch >= state.planned_epochs:
                state.stopped = "epochs" if state.epoch >= t_cfg.epochs else "budget"
            if improved:
                _save(out / "best", model, optimizer, cfg, state)
            _save(out / "last", model, optimizer, cfg, state)
            if state.stopped:
                break
        if pending is not None:
            pending.cancel()
    _log(
        t_cfg,
        f"stopped ({state.stopped or 'done'}) after {state.epoch} epochs, {state.elapsed_s:.0f}s; "
        f"best dev error {state.best_dev_error:.2f}% at epoch {state.best_epoch}; checkpoints in "
        f"{out}",
    )
    return out / "best"


# ---------------------------------------------------------------- evaluation and pictures


def checkpoint_dir(model_dir: str | Path) -> Path:
    """A checkpoint directory itself, or the run directory holding ``best/``."""
    model_dir = Path(model_dir)
    if not (model_dir / "meta.json").is_file() and (model_dir / "best" / "meta.json").is_file():
        return model_dir / "best"
    return model_dir


def load_vision_model(
    model_dir: str | Path, device: str | torch.device = "cpu"
) -> tuple[VisionConfig, Family, nn.Module]:
    """(config, family, model in eval mode) of a vision checkpoint."""
    directory = checkpoint_dir(model_dir)
    ckpt.read_meta(directory, FAMILY)
    cfg = parse_config(ckpt.read_config(directory), str(directory / "config.yaml"))
    family = MODEL_TYPES[cfg.model_type]
    model = family.build(cfg.model)
    ckpt.load_model_state(model, directory)
    device = resolve_device(device) if isinstance(device, str) else device
    return cfg, family, model.to(device).eval()


def evaluate_vision(
    model_dir: Path, split: str = "test", mc_samples: int | None = None, device: str = "auto"
) -> dict:
    """Error % of a trained model on ``split`` ("test" or "dev").

    Returns ``{"split", "task", "model", "images", "accuracy", "error_pct"}``
    (plus ``"mc_samples"`` for RAM: glimpse paths averaged per image,
    ``model.mc_samples`` unless given). For strips, accuracy is whole-string.
    """
    if split not in ("test", "dev"):
        raise ConfigError(f"split {split!r}: evaluate reads test or dev")
    if mc_samples is not None and mc_samples < 1:
        raise ConfigError(f"--mc-samples must be at least 1, got {mc_samples}")
    cfg, family, model = load_vision_model(model_dir, device)
    dev = next(model.parameters()).device
    data = family.to_device(VisionData(cfg.data).split(split), dev)
    mc = mc_samples if mc_samples is not None else family.test_mc(cfg.model)
    with torch.random.fork_rng(devices=[dev.index or 0] if dev.type == "cuda" else []):
        torch.manual_seed(0)  # reproducible Monte Carlo glimpse paths
        result = evaluate_split(family, model, data, cfg.model, cfg.train.eval_batch_size, mc)
    result = {"split": split, "task": cfg.data.task, "model": cfg.model_type, **result}
    if mc is not None:
        result["mc_samples"] = mc
    return result


def plot_vision(model_dir: Path, image_index: int, out: Path) -> list[Path]:
    """Draw where the model looks on test image ``image_index``: a PNG grid and an animated GIF.

    ``out`` is a directory (files named ``<type>-test<N>.png/.gif``) or a file
    name whose stem is used for both. Returns the written paths.
    """
    cfg, family, model = load_vision_model(model_dir, "cpu")
    test = VisionData(cfg.data).split("test")
    if not 0 <= image_index < len(test.images):
        raise ConfigError(
            f"--image {image_index}: the test split has images 0..{len(test.images) - 1}"
        )
    out = Path(out)
    stem = (
        out.with_suffix("")
        if out.suffix.lower() in (".png", ".gif")
        else out / f"{cfg.model_type}-test{image_index}"
    )
    torch.manual_seed(0)
    return family.picture(
        model, test.images[image_index], test.labels[image_index], stem, cfg.model
    )
