"""The experiment file of the graph attention family.

::

    family: graph
    output_dir: runs/cora_gat                      -> where best/ and last/ go
    data:  {name: cora}                            -> GraphDataConfig
    model: {type: gat, attention: gat, heads: 8}   -> GraphModelConfig
    train: {epochs: 1000, lr: 0.005, ...}          -> TrainConfig

Unknown keys anywhere are rejected with the list of valid ones. The ``train`` keys are defined
once for every family (:mod:`attnkit.train_config`).
"""

from __future__ import annotations

from dataclasses import dataclass

from attnkit.config import family_dict, family_output_dir, from_dict
from attnkit.data.graph.sources import GraphDataConfig
from attnkit.families.base import ConfigSummary, describe_experiment
from attnkit.models.graph import GraphModelConfig
from attnkit.train_config import GRAPH, train_config_class

FAMILY = GRAPH

#: ``train:`` of a graph experiment (its keys and defaults: :data:`attnkit.train_config.KEYS`)
TrainConfig = train_config_class(FAMILY, __name__)


@dataclass
class GraphConfig:
    data: GraphDataConfig
    model: GraphModelConfig
    train: TrainConfig
    output_dir: str = "runs/graph"  # run directory (best/ and last/) when the caller gives none

    def to_dict(self) -> dict:
        return family_dict(
            FAMILY, self.output_dir, data=self.data, model=self.model, train=self.train
        )


def parse_config(data: dict, source: str = "config") -> GraphConfig:
    """A parsed YAML mapping -> :class:`GraphConfig`; ConfigError naming ``source`` and the key."""
    output_dir = family_output_dir(data, source, FAMILY, GraphConfig.output_dir)
    return GraphConfig(
        data=from_dict(GraphDataConfig, data.get("data"), f"{source}: data"),
        model=from_dict(GraphModelConfig, data.get("model"), f"{source}: model"),
        train=from_dict(TrainConfig, data.get("train"), f"{source}: train"),
        output_dir=output_dir,
    )


def describe(data: dict) -> ConfigSummary:
    """A graph experiment's data set (``data.name``) and model: a GAT by the attention it uses
    (``const-gat`` for none), else its type."""
    found = describe_experiment(data)
    task = str((data.get("data") or {}).get("name", ""))  # a graph data set has a name
    model = data.get("model") or {}
    if found.model == "gat":
        attention = model.get("attention", "gat")
        return ConfigSummary(task, "const-gat" if attention == "none" else attention)
    return ConfigSummary(task, found.model)
