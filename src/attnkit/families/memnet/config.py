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

from dataclasses import dataclass

from attnkit.config import family_dict, family_output_dir, from_dict
from attnkit.data.babi import BabiConfig
from attnkit.families.base import ConfigSummary, describe_experiment
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
        return family_dict(
            FAMILY, self.output_dir, data=self.data, model=self.model, train=self.train
        )


def parse_config(data: dict, source: str = "config") -> MemnetConfig:
    """A parsed YAML mapping -> :class:`MemnetConfig`; ConfigError naming ``source`` and the
    key."""
    output_dir = family_output_dir(data, source, FAMILY, MemnetConfig.output_dir)
    return MemnetConfig(
        data=from_dict(BabiConfig, data.get("data"), f"{source}: data"),
        model=from_dict(MemN2NConfig, data.get("model"), f"{source}: model"),
        train=from_dict(TrainConfig, data.get("train"), f"{source}: train"),
        output_dir=output_dir,
    )


def describe(data: dict) -> ConfigSummary:
    """A memory-network experiment's bAbI task and its memory (``memn2n-adjacent``)."""
    model = data.get("model") or {}
    return ConfigSummary(
        describe_experiment(data).task, f"memn2n-{model.get('memory', 'adjacent')}"
    )
