"""The experiment file of the pointer-network family.

::

    family: pointer
    output_dir: runs/pointer_sort10               -> where best/ and last/ go
    data:  {task: sort, points: 10, ...}          -> PointerData (attnkit.data.tasks.pointer)
    model: {hidden: 128, attention_dim: 128, ...} -> PointerConfig (attnkit.models.pointer)
    train: {epochs: 50, batch_size: 128, ...}     -> TrainConfig
    decode: {beam_size: 5}                        -> DecodeSettings

Unknown keys anywhere are rejected with the valid ones listed. The ``train`` keys are those of
:data:`attnkit.train_config.KEYS` that :data:`TRAIN_KEYS` lists, with this family's defaults:
those other families also have mean the same there.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from attnkit.config import FAMILY_SECTIONS, family_dict, family_output_dir, from_dict
from attnkit.data.tasks.pointer import PointerData
from attnkit.errors import ConfigError
from attnkit.families.base import ConfigSummary, describe_experiment
from attnkit.models.pointer import PointerConfig
from attnkit.train_config import Row, train_config_class

FAMILY = "pointer"

#: the ``train:`` keys of a pointer experiment: each one's default here, and what it means
#: here where that differs from the key's general meaning (the keys, their types, rules and
#: order: :data:`attnkit.train_config.KEYS`)
TRAIN_KEYS: dict[str, Row] = {
    "epochs": Row(50, "most passes over the training instances"),
    "batch_size": Row(128, "instances per update"),
    "eval_batch_size": Row(1000, "instances per forward pass when scoring dev/test"),
    "lr": Row(1e-3, "Adam learning rate (constant)"),
    "clip": Row(2.0, "gradient-norm clipping (0 or null = off)"),
    "max_bad_updates": Row(
        20,
        "updates with a NaN/inf loss or gradient norm are skipped; this many in a row stop the run",
    ),
    "scheduler": Row(
        "constant",
        "constant; cosine: decay to min_lr by the end of the planned epochs or of "
        "max_minutes, whichever comes first",
    ),
    "min_lr": Row(1e-5, "cosine: where the rate ends"),
    "patience": Row(
        5,
        "early stopping: evaluations without a better dev exact match (null: never)",
    ),
    "eval_every": Row(0),
    "max_minutes": Row(None, "time budget for training (null: none)"),
    "seed": Row(1, "seed of the initialisation and the batch order"),
    "device": Row("auto", "auto | cpu | cuda"),
    "threads": Row(0, "torch CPU threads (0 or null = torch's default)"),
    "progress": Row(True),
    "verbose": Row(True),
    "tensorboard": Row(True, "event files in run_dir/tensorboard: loss, accuracy, dev metrics"),
}
#: the values a train key takes, where they are a list
TRAIN_CHOICES = {"scheduler": ("constant", "cosine"), "device": ("auto", "cpu", "cuda")}

TrainConfig = train_config_class(FAMILY, TRAIN_KEYS, TRAIN_CHOICES, __name__)


@dataclass
class DecodeSettings:
    """The ``decode:`` section: the beam ``attnkit evaluate`` runs beside greedy decoding."""

    beam_size: int = 5  # the beam `attnkit evaluate` runs beside greedy decoding (1: greedy only)

    def validate(self, where: str) -> None:
        if self.beam_size < 1:
            raise ConfigError(f"{where}.beam_size: must be at least 1, got {self.beam_size}")


@dataclass
class PointerExperiment:
    data: PointerData
    model: PointerConfig
    train: TrainConfig
    decode: DecodeSettings = field(default_factory=DecodeSettings)
    output_dir: str = "runs/pointer"  # run directory (best/ and last/) when the caller gives none

    def to_dict(self) -> dict:
        return family_dict(
            FAMILY,
            self.output_dir,
            data=self.data,
            model=self.model,
            train=self.train,
            decode=self.decode,
        )


SECTIONS = (*FAMILY_SECTIONS, "decode")


def parse_config(data: dict, source: str = "config") -> PointerExperiment:
    """A parsed YAML mapping -> :class:`PointerExperiment`; ConfigError naming ``source`` and the
    key."""
    output_dir = family_output_dir(data, source, FAMILY, PointerExperiment.output_dir, SECTIONS)
    return PointerExperiment(
        data=from_dict(PointerData, data.get("data"), f"{source}: data"),
        model=from_dict(PointerConfig, data.get("model"), f"{source}: model"),
        train=from_dict(TrainConfig, data.get("train"), f"{source}: train"),
        decode=from_dict(DecodeSettings, data.get("decode"), f"{source}: decode"),
        output_dir=output_dir,
    )


def describe(data: dict) -> ConfigSummary:
    """A pointer-network experiment's task; its model is a pointer network."""
    return ConfigSummary(describe_experiment(data).task, "pointer network")
