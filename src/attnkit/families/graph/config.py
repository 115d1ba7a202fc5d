"""The experiment file of the graph attention family.

::

    family: graph
    output_dir: runs/cora_gat                      -> where best/ and last/ go
    data:  {name: cora}                            -> GraphDataConfig
    model: {type: gat, attention: gat, heads: 8}   -> GraphModelConfig
    train: {epochs: 1000, lr: 0.005, ...}          -> TrainConfig

Unknown keys anywhere are rejected with the list of valid ones. The ``train`` keys are those of
:data:`attnkit.train_config.KEYS` that :data:`TRAIN_KEYS` lists, with this family's defaults.
"""

from __future__ import annotations

from dataclasses import dataclass

from attnkit.config import family_dict, family_output_dir, from_dict
from attnkit.data.graph.sources import GraphDataConfig
from attnkit.families.base import ConfigSummary, describe_experiment
from attnkit.models.graph import GraphModelConfig
from attnkit.train_config import KEYS, Row, train_config_class

FAMILY = "graph"

#: the ``train:`` keys of a graph experiment: each one's default here, and what it means
#: here where that differs from the key's general meaning (the keys, their types, rules and
#: order: :data:`attnkit.train_config.KEYS`)
TRAIN_KEYS: dict[str, Row] = {
    "epochs": Row(1000, "Most epochs: each is one full-graph update and one dev evaluation."),
    "lr": Row(0.005, "Adam learning rate (constant)."),
    "clip": Row(None),
    "max_bad_updates": Row(20),
    "weight_decay": Row(5e-4, "Adam weight decay (L2), the GAT recipe's 5e-4."),
    "patience": Row(
        100,
        "Early stopping: stop after this many epochs in which neither the dev accuracy "
        "reached its best nor the dev loss its lowest (null: never).",
    ),
    "max_minutes": Row(None, "Wall-clock budget for training (null: none)."),
    "seed": Row(0, "Seed of the initialisation and of dropout."),
    "device": Row("auto"),
    "threads": Row(None),
    "progress": Row(False, KEYS["progress"].meaning + " An epoch is one update: off by default."),
    "verbose": Row(
        True,
        KEYS["verbose"].meaning + " A graph's: every 50 epochs and when it is best.",
    ),
    "tensorboard": Row(True),
}
#: the values a train key takes, where they are a list
TRAIN_CHOICES = {"device": ("auto", "cpu", "cuda")}

TrainConfig = train_config_class(FAMILY, TRAIN_KEYS, TRAIN_CHOICES, __name__)


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
