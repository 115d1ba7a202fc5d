"""The checkpoints a server answers with: loaded once, read-only, each under a short name.

Each ``--model DIR`` is loaded by :func:`attnkit.load` (the Python API) as the API object of
its family, told apart by the checkpoint's ``meta.json``; the family's endpoint answers it.
Nothing is written to the directories. A request names a model by its name only, never by a
path.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from attnkit.api import load
from attnkit.errors import ConfigError
from attnkit.families import FAMILIES
from attnkit.families.serving import Limits, ServedModel

#: path parts that name a checkpoint inside a run, not the run: skipped when naming a model
CHECKPOINT_PARTS = ("model", "best", "last", "averaged")


def describe(model: ServedModel, limits: Limits) -> dict:
    """What ``GET /v1/models`` says of ``model``: its name, family and the limits, then what its
    family's endpoint says of it, and its ``example`` (the endpoint's, or None): the input the
    explorer opens with."""
    endpoint = FAMILIES[model.family].served()
    example = endpoint.example(model.loaded) if endpoint.example is not None else None
    return {
        "name": model.name,
        "family": model.family,
        "limits": limits.to_dict(),
        **endpoint.info(model.loaded),
        "example": example,
    }


def model_name(directory: Path) -> str:
    """A short name from a checkpoint's path: its last part that is not one of
    :data:`CHECKPOINT_PARTS` (``runs/demo/model/best`` -> ``demo``)."""
    for part in reversed(Path(directory).resolve().parts):
        if part not in CHECKPOINT_PARTS and part != "/":
            return part
    return "model"


def model_names(directories: Sequence[Path], given: Sequence[str]) -> list[str]:
    """One unique name per directory: ``given`` in order, then names from the paths (made
    unique with ``-2``, ``-3``, ...)."""
    if len(given) > len(directories):
        raise ConfigError(f"{len(given)} --name for {len(directories)} --model: one name each")
    names: list[str] = []
    for i, directory in enumerate(directories):
        if i < len(given):
            if given[i] in names or not given[i].strip():
                raise ConfigError(f"--name {given[i]!r}: names must be unique and not blank")
            names.append(given[i])
            continue
        base = model_name(directory)
        name, n = base, 2
        while name in names or name in given:
            name, n = f"{base}-{n}", n + 1
        names.append(name)
    return names


def load_models(
    directories: Sequence[Path], given: Sequence[str] = (), device: str = "auto"
) -> dict[str, ServedModel]:
    """name -> loaded model, in the order given (the first answers requests naming none)."""
    if not directories:
        raise ConfigError("give at least one --model DIR")
    served = {}
    answered = [name for name, family in FAMILIES.items() if family.endpoint is not None]
    for name, directory in zip(model_names(directories, given), directories):
        model = load(Path(directory), device)
        family = FAMILIES[model.family]
        if family.endpoint is None:
            raise ConfigError(
                f"--model {directory}: a {model.family} checkpoint; attnkit serve serves "
                f"{', '.join(answered)} models"
            )
        path = family.served().path
        served[name] = ServedModel(name, Path(directory), model.family, model, path)
    return served
