"""A vision run's checkpoints: the bundle (:class:`VisionBundle`: the model with its experiment
config, written and read as one directory of the common format, :mod:`attnkit.checkpoint`), the
trainer's counters, optimizer and RNG; and :func:`load_vision_model`, a checkpoint's model ready
to use with its model kind.

:func:`load_vision` reads a checkpoint (or a run directory holding ``best/``), checks its files,
builds the model its config names (:data:`attnkit.models.vision.VISION_MODELS`) and loads its
weights. ``OUT/best`` (weights, config, counters) and ``OUT/last`` (also the optimizer and the
RNG) are written with :func:`save`; :func:`restore` loads ``last``
back into a fresh model and optimizer for ``--resume``, each part checked first
(:mod:`attnkit.training.resume`); the counters are the run's
:class:`~attnkit.training.state.TrainerState` under the names of
:data:`~attnkit.training.state.VISION`. An epoch a signal interrupted is saved with its image order
(``epoch_order``), so the resumed run trains the rest of that epoch in the same order.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import torch
from torch import Tensor, nn

from attnkit import checkpoint as ckpt
from attnkit.checkpoint.validate import build_checked
from attnkit.checkpoint.weights import load_model_state
from attnkit.data.location import checkpoint_data
from attnkit.device import resolve_device
from attnkit.errors import CheckpointError
from attnkit.families.vision.config import FAMILY, VisionConfig, parse_config
from attnkit.families.vision.kinds import MODEL_TYPES, ModelKind
from attnkit.models.vision import VISION_MODELS
from attnkit.training import resume
from attnkit.training.guard import check_weights
from attnkit.training.state import TrainerState, from_trainer, to_trainer


@dataclass
class VisionBundle:
    """What a vision checkpoint holds, in memory: the model and the experiment config it was
    built from."""

    model: nn.Module
    config: VisionConfig

    def save(
        self,
        directory: str | Path,
        trainer_state: dict | None = None,
        trainer_tensors: dict[str, torch.Tensor] | None = None,
    ) -> Path:
        """Write the bundle as a checkpoint directory, atomically (with the trainer's state for
        ``best`` and ``last``)."""
        return ckpt.write_checkpoint(
            directory,
            FAMILY,
            self.model.state_dict(),
            self.config.to_dict(),
            trainer_state,
            trainer_tensors,
        )


def load_vision(model_dir: str | Path, device: torch.device) -> VisionBundle:
    """A vision checkpoint (or a run holding ``best/``) as a bundle: its model built from the
    saved config, given the saved weights, on ``device`` in eval mode.

    A checkpoint written before the train keys were renamed loads too: its saved config is
    translated (:mod:`attnkit.renamed_keys`). Its ``data.directory`` and ``data.download`` are
    not followed: MNIST is read from ``$ATTNKIT_DATA_DIR/mnist`` (else the user cache), never
    fetched."""
    directory = ckpt.checkpoint_dir(model_dir)
    ckpt.read_meta(directory, FAMILY)
    cfg = parse_config(ckpt.read_config(directory), str(directory / "config.yaml"), user=False)
    cfg.data = checkpoint_data(cfg.data)
    # the file's shapes checked before any memory is allocated
    model = build_checked(directory, lambda: VISION_MODELS[cfg.model_type].build(cfg.model))
    return VisionBundle(model.to(device).eval(), cfg)


def save(
    directory: Path,
    model: nn.Module,
    optimizer,
    cfg: VisionConfig,
    state: TrainerState,
    epoch_order: Tensor | None = None,
    resumable: bool = True,
) -> None:
    """Write a checkpoint; ``epoch_order`` (N,): the image order of an interrupted epoch.

    ``resumable`` adds the optimizer and the RNG that ``--resume`` needs (``last``); without it
    (``best``) the checkpoint holds what evaluating and plotting read, a third of the size.
    """
    check_weights(model, f"epoch {state.epoch} (step {state.step}): {directory} not written")
    trainer = to_trainer(state)  # best: null until an epoch is scored
    bundle = VisionBundle(model, cfg)
    if not resumable:
        bundle.save(directory, trainer)
        return
    info, tensors = resume.optimizer_to_tensors(optimizer)
    if epoch_order is not None:  # an interrupted epoch: its image order, to go on with
        tensors["epoch_order"] = epoch_order
    tensors["rng.torch"] = torch.get_rng_state()
    if torch.cuda.is_available() and torch.cuda.is_initialized():
        tensors["rng.cuda"] = torch.cuda.get_rng_state()
    trainer["optimizer"] = info
    bundle.save(directory, trainer, tensors)


def restore(directory: Path, model: nn.Module, optimizer) -> TrainerState:
    """Weights, optimizer, counters and RNG of ``directory``, each checked before it is loaded."""
    ckpt.read_meta(directory, FAMILY)
    load_model_state(model, directory)
    json_path, tensors_path = directory / "trainer.json", directory / "trainer.safetensors"
    state, sections = from_trainer(ckpt.read_json(json_path), str(json_path), ("optimizer",))
    tensors = ckpt.read_tensors(tensors_path)
    resume.check_tensor_names(tensors, tensors_path, extra=("epoch_order",))
    resume.restore_optimizer(optimizer, sections["optimizer"], tensors, json_path, tensors_path)
    resume.restore_rng(tensors, tensors_path)
    return state


def interrupted_order(directory: Path, device: torch.device) -> Tensor:
    """The image order (N,) of the epoch a signal interrupted, saved with ``last``."""
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


def load_vision_model(
    model_dir: str | Path, device: str | torch.device = "cpu"
) -> tuple[VisionConfig, ModelKind, nn.Module]:
    """(config, kind, model in eval mode) of a vision checkpoint (or a run holding ``best/``):
    the bundle :func:`load_vision` reads, with the model kind of
    its model type (what scoring and pictures need)."""
    device = resolve_device(device) if isinstance(device, str) else device
    bundle = load_vision(model_dir, device)
    return bundle.config, MODEL_TYPES[bundle.config.model_type], bundle.model
