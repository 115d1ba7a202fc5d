"""The experiment file of the pointer-network family.

::

    family: pointer
    output_dir: runs/pointer_sort10               -> where best/ and last/ go
    data:  {task: sort, points: 10, ...}          -> PointerData (attnkit.data.tasks.pointer)
    model: {hidden: 128, attention_dim: 128, ...} -> PointerConfig (attnkit.models.pointer)
    train: {epochs: 50, batch_size: 128, ...}     -> TrainConfig
    decode: {beam_size: 5}                        -> DecodeSettings

Unknown keys anywhere are rejected with the valid ones listed. The ``train`` keys are the table of
:mod:`attnkit.train_config` (the ``pointer`` column): those other families also have mean the
same there.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

from attnkit.config import from_dict
from attnkit.data.tasks.pointer import PointerData
from attnkit.errors import ConfigError
from attnkit.models.pointer import PointerConfig
from attnkit.train_config import POINTER, train_config_class

FAMILY = POINTER

#: ``train:`` of a pointer experiment (its keys and defaults: :data:`attnkit.train_config.KEYS`)
TrainConfig = train_config_class(FAMILY, __name__)


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
        return {
            "family": FAMILY,
            "output_dir": self.output_dir,
            "data": asdict(self.data),
            "model": asdict(self.model),
            "train": asdict(self.train),
            "decode": asdict(self.decode),
        }


SECTIONS = ("family", "output_dir", "data", "model", "train", "decode")


def parse_config(data: dict, source: str = "config") -> PointerExperiment:
    """A parsed YAML mapping -> :class:`PointerExperiment`; ConfigError naming ``source`` and the
    key."""
    if not isinstance(data, dict):
        raise ConfigError(f"{source}: the top level must be a mapping of sections")
    unknown = sorted(set(data) - set(SECTIONS), key=repr)
    if unknown:
        raise ConfigError(
            f"{source}: unknown key{'s' if len(unknown) > 1 else ''} "
            f"{', '.join(map(repr, unknown))}; valid keys: {', '.join(SECTIONS)}"
        )
    if data.get("family", FAMILY) != FAMILY:
        raise ConfigError(
            f"{source}: family: {data.get('family')!r} is not a pointer config (family: pointer)"
        )
    output_dir = data.get("output_dir")
    output_dir = PointerExperiment.output_dir if output_dir is None else output_dir
    if not isinstance(output_dir, str) or not output_dir:
        raise ConfigError(f"{source}: output_dir: expected a directory name, got {output_dir!r}")
    return PointerExperiment(
        data=from_dict(PointerData, data.get("data"), f"{source}: data"),
        model=from_dict(PointerConfig, data.get("model"), f"{source}: model"),
        train=from_dict(TrainConfig, data.get("train"), f"{source}: train"),
        decode=from_dict(DecodeSettings, data.get("decode"), f"{source}: decode"),
        output_dir=output_dir,
    )
