"""The experiment file of the memory-network family (bAbI question answering).

::

    family: memnet
    output_dir: runs/babi_memn2n_task1            -> where best/ and last/ go
    data:  {task: 1, memory_size: 50, ...}        -> attnkit.data.babi.BabiConfig
    model: {hops: 3, dim: 20, memory: adjacent}   -> attnkit.models.memn2n.MemN2NConfig
    train: {epochs: 100, lr: 0.01, ...}           -> TrainConfig

Unknown keys anywhere are refused with the valid ones listed. The ``train`` keys are defined once
for every family (:mod:`attnkit.train_config`, the ``memnet`` column).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

from attnkit.config import from_dict
from attnkit.data.babi import BabiConfig
from attnkit.errors import ConfigError
from attnkit.models.memn2n import MemN2NConfig
from attnkit.train_config import MEMNET, train_config_class

FAMILY = MEMNET

#: ``train:`` of a memory-network experiment (its keys and defaults: attnkit.train_config.KEYS)
TrainConfig = train_config_class(FAMILY, __name__)


@dataclass
class MemnetConfig:
    data: BabiConfig
    model: MemN2NConfig
    train: TrainConfig
    output_dir: str = "runs/memnet"  # run directory (best/ and last/) when the caller gives none

    def to_dict(self) -> dict:
        return {
            "family": FAMILY,
            "output_dir": self.output_dir,
            "data": asdict(self.data),
            "model": asdict(self.model),
            "train": asdict(self.train),
        }


def parse_config(data: dict, source: str = "config") -> MemnetConfig:
    """A parsed YAML mapping -> :class:`MemnetConfig`; ConfigError naming ``source`` and the
    key."""
    if not isinstance(data, dict):
        raise ConfigError(f"{source}: the top level must be a mapping of sections")
    valid = ("family", "output_dir", "data", "model", "train")
    unknown = sorted(set(data) - set(valid), key=repr)
    if unknown:
        raise ConfigError(
            f"{source}: unknown key{'s' if len(unknown) > 1 else ''} "
            f"{', '.join(map(repr, unknown))}; valid keys: {', '.join(valid)}"
        )
    if data.get("family", FAMILY) != FAMILY:
        raise ConfigError(f"{source}: family: {data.get('family')!r} is not {FAMILY!r}")
    output_dir = data.get("output_dir") or MemnetConfig.output_dir
    if not isinstance(output_dir, str):
        raise ConfigError(f"{source}: output_dir: expected a directory name, got {output_dir!r}")
    return MemnetConfig(
        data=from_dict(BabiConfig, data.get("data"), f"{source}: data"),
        model=from_dict(MemN2NConfig, data.get("model"), f"{source}: model"),
        train=from_dict(TrainConfig, data.get("train"), f"{source}: train"),
        output_dir=output_dir,
    )
