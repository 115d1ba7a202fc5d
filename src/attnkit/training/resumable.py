"""``--resume`` for a family whose ``last/`` is written by one function: the counters, the
optimizer and the RNG streams, saved and read back, each part checked first.

The text, graph, memory-network and pointer families use it: ``trainer.json`` holds the
counters of a :class:`~attnkit.training.state.TrainerState` in the one layout of
:mod:`attnkit.training.state` and, in ``last/``, the optimizer's ``param_groups``;
``trainer.safetensors`` holds the optimizer's tensors, torch's RNG state (``rng.torch``,
``rng.cuda`` where a GPU trained) and a family's own generators (``rng.<name>``: the memory
network's random-noise stream, for one). A learning-rate schedule that is a function
of the update and the epoch (all these families have) needs nothing saved.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import torch
from torch import nn

from attnkit import checkpoint as ckpt
from attnkit.checkpoint.weights import load_model_state
from attnkit.errors import CheckpointError
from attnkit.training import resume, resume_config
from attnkit.training.guard import check_weights
from attnkit.training.state import TrainerState, from_trainer, to_trainer


def trainer_files(
    state: TrainerState,
    optimizer: torch.optim.Optimizer | None,
    generators: dict[str, torch.Generator] | None = None,
) -> tuple[dict, dict[str, torch.Tensor] | None]:
    """(``trainer.json``, ``trainer.safetensors``) of a checkpoint: the counters alone where
    ``optimizer`` is None (``best/``), else with what ``--resume`` needs (``last/``)."""
    trainer = to_trainer(state)
    if optimizer is None:
        return trainer, None
    info, tensors = resume.optimizer_to_tensors(optimizer)
    tensors["rng.torch"] = torch.get_rng_state()
    if torch.cuda.is_available() and torch.cuda.is_initialized():
        tensors["rng.cuda"] = torch.cuda.get_rng_state()
    for name, generator in (generators or {}).items():
        tensors[f"rng.{name}"] = generator.get_state()
    trainer["optimizer"] = info
    return trainer, tensors


def save_checkpoint(
    directory: Path,
    family: str,
    model: nn.Module,
    config: dict,
    state: TrainerState,
    optimizer: torch.optim.Optimizer | None,
) -> None:
    """A run's checkpoint in ``directory``: its weights (checked finite first), ``config`` and
    the trainer files of :func:`trainer_files` (``optimizer`` None: ``best/``, no resume)."""
    check_weights(model, f"update {state.step}: {directory} not written")
    trainer, tensors = trainer_files(state, optimizer)
    ckpt.write_checkpoint(directory, family, model.state_dict(), config, trainer, tensors)


def restore(
    directory: Path,
    family: str,
    model: nn.Module,
    optimizer: torch.optim.Optimizer,
    generators: dict[str, torch.Generator] | None = None,
) -> TrainerState:
    """Weights, optimizer, counters and RNG streams of ``directory`` (a ``last/``), each
    checked before it is loaded; a damaged part is one CheckpointError naming file and key."""
    generators = generators or {}
    ckpt.read_meta(directory, family)
    load_model_state(model, directory)
    json_path, tensors_path = directory / "trainer.json", directory / "trainer.safetensors"
    state, sections = from_trainer(ckpt.read_json(json_path), str(json_path), ("optimizer",))
    tensors = ckpt.read_tensors(tensors_path)
    own = tuple(f"rng.{name}" for name in generators)
    resume.check_tensor_names(tensors, tensors_path, own)
    resume.restore_optimizer(optimizer, sections["optimizer"], tensors, json_path, tensors_path)
    resume.restore_rng(tensors, tensors_path)
    for name, generator in generators.items():
        _restore_generator(generator, tensors.get(f"rng.{name}"), tensors_path, f"rng.{name}")
    return state


def _restore_generator(generator: torch.Generator, saved, path: Path, key: str) -> None:
    own = generator.get_state()
    if saved is None:
        raise CheckpointError(f"{path}: {key!r} is missing")
    if saved.dtype != own.dtype or saved.shape != own.shape:
        raise CheckpointError(
            f"{path}: {key} is {str(saved.dtype).removeprefix('torch.')} {tuple(saved.shape)}, "
            f"a generator's state is {str(own.dtype).removeprefix('torch.')} {tuple(own.shape)}"
        )
    try:
        generator.set_state(saved)
    except RuntimeError as exc:  # a state of the right size torch will not take
        raise CheckpointError(f"{path}: {key} is not a generator's state ({exc})") from None


def config_to_resume(
    asked: Any,
    last: Path,
    overrides: Sequence[str],
    source: str,
    parse: Callable[[dict, str], Any],
    rules: resume_config.Rules,
) -> Any:
    """The config saved in ``last`` with the keys ``overrides`` name taken from ``asked`` (a
    parsed config; ``parse(mapping, source)`` parses one); a change a resumed run cannot
    honour is a ConfigError naming the key."""
    if not last.is_dir():
        raise CheckpointError(f"{last}: nothing to resume (train without --resume first)")
    saved = parse(ckpt.read_config(last), str(last))
    merged, note = resume_config.request(
        saved.to_dict(), asked.to_dict(), overrides, rules, last, source
    )
    if note:
        print(note, file=sys.stderr)
    return parse(merged, f"{last} with --set")
