"""The record a family gives the registry: all that attnkit's generic layers (``api/``,
``serve/``, ``cli/``) know of a family.

A family is one folder, ``attnkit/families/<name>/``, holding its application glue: the API
object (``model.py``), its training entry (``train.py``), its bundle, its server endpoint
(``endpoint.py``) and its command-line hooks (``cli.py``). Its ``__init__.py`` defines one
:class:`Family`, and ``attnkit/families/__init__.py`` lists it: that line is the only place
outside the folder that names it.

The record names its parts as ``"module:attribute"`` strings inside the family's package, read
on first use: ``import attnkit`` (and ``attnkit --help``) stays free of torch, and a family's
heavy modules load only when one of its models is.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class TrainRequest:
    """What ``attnkit.train`` (and ``attnkit train``) was asked: handed to a family's ``train``
    with the experiment mapping."""

    config: Path  # the experiment file (or a label, for a mapping given in Python)
    overrides: list[str] = field(default_factory=list)  # ``--set`` strings: ``train.lr=3e-4``
    output_dir: Path | None = None  # None: the config's ``output_dir``, else runs/<name>
    resume: bool = False  # continue from ``last/``
    overwrite: bool = False  # a fresh run may replace an earlier run's checkpoints

    def run_options(self) -> dict:
        """The keyword arguments every family's ``train_<family>`` function takes of the
        request: ``output_dir``, ``resume``, ``source`` (the file, for errors), ``overwrite``,
        ``overrides``."""
        return {
            "output_dir": self.output_dir,
            "resume": self.resume,
            "source": str(self.config),
            "overwrite": self.overwrite,
            "overrides": self.overrides,
        }

    @property
    def config_dir(self) -> Path | None:
        """The directory relative paths of the experiment file are read from (None for a
        mapping given in Python)."""
        return self.config.parent if self.config.is_file() else None


@dataclass(frozen=True)
class ConfigSummary:
    """What ``attnkit.configs()`` says of one experiment file: its task and what it trains."""

    task: str
    model: str


@dataclass(frozen=True)
class Family:
    """One family of attention models, as the registry knows it.

    ``name`` is what an experiment file's ``family:`` and a checkpoint's ``meta.json`` say.
    The parts are ``"module:attribute"`` inside ``package``:

    - ``model``: the API object's class; ``Class.load(path_or_paths, device)`` opens a
      checkpoint (:func:`attnkit.load`).
    - ``train``: ``(experiment mapping, TrainRequest) -> best checkpoint directory``.
    - ``describe``: ``(experiment mapping) -> ConfigSummary`` for :func:`attnkit.configs`
      (None: :func:`describe_experiment`).
    - ``endpoint``: an :class:`~attnkit.families.serving.Endpoint` (the server's route), or None
      for a family the server does not answer.
    - ``cli``: a module whose ``plot(args)``, ``evaluate(args)``, ``explain(args)`` and
      ``faithfulness(args)`` run those commands for the family's checkpoints; a missing function
      means the command does not apply.
    - ``public``: the names the family adds to ``attnkit`` and ``attnkit.api`` (its API object,
      its result types); a module starting ``attnkit.`` is taken as it is.

    ``scheme``: models that are not attnkit checkpoints (no ``meta.json``), named
    ``"<scheme>:<rest>"`` wherever a checkpoint is asked for (:func:`attnkit.load`, ``--model``),
    load through this family's ``model`` (given the whole name); None for a family of
    checkpoints only.
    """

    name: str
    package: str
    model: str
    train: str
    describe: str | None = None  # None: :func:`describe_experiment`
    endpoint: str | None = None
    cli: str = "cli"
    public: tuple[str, ...] = ()
    ensembles: bool = False  # several checkpoints load as one model (an ensemble)
    #: command -> the options of that command only this family's hook reads (``evaluate``:
    #: ``("src", "ref", "tsv")``); given for a checkpoint of another family, they are refused
    own_options: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    scheme: str | None = None  # "<scheme>:<rest>" names a model this family loads
    #: how a test-set score of its models was measured, as ``attnkit zoo`` says it
    scoring: str = "test set"
    #: its :class:`~attnkit.families.fault_inputs.FaultInputs` for the hostile-input harness
    faults: str = "faults:INPUTS"

    def owns(self, path: object) -> bool:
        """``path`` is ``"<scheme>:<rest>"`` of this family's scheme."""
        return self.scheme is not None and str(path).startswith(f"{self.scheme}:")

    def resolve(self, ref: str) -> Any:
        """The attribute ``ref`` (``"module:name"``, or ``"module"`` for the module itself)
        names inside the family's package."""
        module, _, attribute = ref.partition(":")
        absolute = module.startswith("attnkit.")  # a name the family re-exports from a floor below
        found = importlib.import_module(module if absolute else f"{self.package}.{module}")
        return getattr(found, attribute) if attribute else found

    def summary(self, data: Mapping[str, Any]) -> ConfigSummary:
        """What ``attnkit.configs()`` says of the experiment mapping ``data``."""
        return (
            describe_experiment(data)
            if self.describe is None
            else self.resolve(self.describe)(data)
        )

    def served(self):
        """The family's :class:`~attnkit.families.serving.Endpoint`, or None where the server
        does not answer it."""
        return None if self.endpoint is None else self.resolve(self.endpoint)

    def model_class(self) -> type:
        return self.resolve(self.model)

    def hook(self, command: str) -> Callable | None:
        """The family's function for CLI ``command`` (``plot``, ``evaluate``, ``explain``,
        ``faithfulness``), or None where the command does not apply to it."""
        return getattr(self.resolve(self.cli), command, None)

    def fault_inputs(self):
        """The family's :class:`~attnkit.families.fault_inputs.FaultInputs` (``faults``)."""
        return self.resolve(self.faults)

    def public_names(self) -> Mapping[str, str]:
        """Public name -> its ``"module:name"`` reference."""
        return {ref.partition(":")[2]: ref for ref in self.public}


def describe_experiment(data: Mapping[str, Any]) -> ConfigSummary:
    """An experiment's task (``data.task``) and model (``model.type``, a Transformer, else the
    attention it uses)."""
    model = data.get("model") or {}
    section = data.get("data") or {}
    kind = model.get("type") or (
        "transformer" if model.get("arch") == "transformer" else model.get("attention", "")
    )
    return ConfigSummary(str(section.get("task", "")), str(kind))
