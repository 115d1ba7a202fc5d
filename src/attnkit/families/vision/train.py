"""Training for the visual attention family.

An experiment file has ``family: vision`` (:mod:`attnkit.families.vision.config`).
:func:`train_vision` (the CLI calls it) trains in the training driver
(:mod:`attnkit.training.run`), keeping ``OUT/best`` (lowest dev error) and ``OUT/last``;
``--resume`` goes on from ``OUT/last`` (its trainer state checked first,
:mod:`attnkit.families.vision.bundle`).

Evaluation is :mod:`attnkit.families.vision.evaluate`; the pictures of where a model looks,
:mod:`attnkit.families.vision.pictures`; loading a checkpoint,
:func:`attnkit.families.vision.bundle.load_vision_model`.

The epochs, the time budget, signals, skipped updates, patience, the log and checkpoints are the
training loop's (:mod:`attnkit.training.loop`); what is vision's in them, the adapter's
(:mod:`attnkit.families.vision.adapter`): data on the training device, cut into batches there,
the training images redrawn every epoch in a background thread, the budget's plan. The dev error
is :func:`attnkit.families.vision.scoring.evaluate_split`, given to the adapter.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path

import torch

from attnkit import checkpoint as ckpt
from attnkit.accel.backend import resolve as resolve_backend
from attnkit.config import apply_overrides
from attnkit.data.tasks.vision import VisionData
from attnkit.errors import CheckpointError
from attnkit.families.base import TrainRequest
from attnkit.families.vision import bundle as vckpt
from attnkit.families.vision.adapter import VisionAdapter
from attnkit.families.vision.config import VisionConfig, parse_config
from attnkit.families.vision.kinds import MODEL_TYPES
from attnkit.families.vision.scoring import evaluate_split
from attnkit.training import resume_config, rundir
from attnkit.training.run import Context, Plan, Started, run
from attnkit.training.state import TrainerState

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
    out = Path(output_dir) if output_dir is not None else Path(cfg.output_dir)
    if resume and overrides is not None:
        cfg = _config_to_resume(cfg, out / "last", overrides, source)
    plan = Plan(out, cfg.train, "images", resume, overwrite, source)
    return run(plan, lambda context: _start(cfg, context))


def _start(cfg: VisionConfig, context: Context) -> Started:
    """The model and optimizer (fresh, or ``last``'s), the data on the device and the adapter."""
    t_cfg, out, device = cfg.train, context.plan.out, context.device
    if device.type == "cuda":
        torch.backends.cudnn.benchmark = True
    kind = MODEL_TYPES[cfg.model_type]
    model = kind.build(cfg.model).to(device)
    # reference: plain torch; auto: the device's fastest (kernels on a CPU); compile: no kernels
    model.set_backend(resolve_backend(t_cfg.backend, device, next(model.parameters()).dtype))
    optimizer = torch.optim.Adam(
        model.parameters(),
        lr=t_cfg.lr,
        weight_decay=t_cfg.weight_decay,
        fused=device.type == "cuda",
    )
    state = TrainerState(planned_epochs=t_cfg.epochs)
    if context.plan.resume:
        state = _resumed_state(cfg, out, model, optimizer, context.log.notice)
    weights = sum(t.numel() * t.element_size() for t in model.state_dict().values())
    rundir.check_space(out, 3 * weights)  # the weights and Adam's two moments
    resumed = vckpt.interrupted_order(out / "last", device) if state.batches_done else None
    data = VisionData(cfg.data)
    dev_split = data.split("dev")
    dev = kind.to_device(dev_split, device)
    mc_samples = kind.dev_mc(cfg.model)
    parameters = sum(p.numel() for p in model.parameters())
    context.log(
        f"training {cfg.model_type} on {cfg.data.task} ({device}), "
        f"{parameters:,} parameters, {data.describe()}"
    )
    adapter = VisionAdapter(
        cfg,
        out,
        kind,
        model,
        optimizer,
        data,
        dev_split,
        lambda: evaluate_split(kind, model, dev, cfg.model, t_cfg.eval_batch_size, mc_samples),
        resumed,
        state.epoch,
    )
    return Started(adapter, state, close=adapter.close)


def _tell(line: str) -> None:
    """A line about what a resumed run goes on with: on stderr, as the epochs' lines, but also
    without ``train.verbose`` (it is not an epoch's summary)."""
    print(line, file=sys.stderr)


def _saved_config(last: Path) -> VisionConfig:
    rundir.recover_before_resume(last.parent)  # a save a crash interrupted: put back first
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


def _resumed_state(cfg: VisionConfig, out: Path, model, optimizer, log) -> TrainerState:
    """Load ``out/last`` into ``model`` and ``optimizer``, once ``cfg`` changes nothing resume
    cannot honour (each change is said to ``log``); its counters, to go on from."""
    last = out / "last"
    saved = _saved_config(last)
    lines = resume_config.changes(saved.to_dict(), cfg.to_dict(), resume_config.VISION, last)
    for line in lines:
        log(line)
    state = vckpt.restore(last, model, optimizer)
    state.stopped, state.planned_epochs = "", cfg.train.epochs  # the config may ask for more now
    return state


def train(data: dict, request: TrainRequest) -> Path:
    """``attnkit.train`` of a vision experiment: its best checkpoint."""
    return train_vision(data, **request.run_options())
