"""The experiment file of the memory-network family (bAbI question answering).

::

    family: memnet
    output_dir: runs/babi_memn2n_task1            -> where best/ and last/ go
    data:  {task: 1, memory_size: 50, ...}        -> attnkit.data.babi.BabiConfig
    model: {hops: 3, dim: 20, memory: adjacent}   -> attnkit.models.memn2n.MemN2NConfig
    train: {epochs: 100, lr: 0.01, ...}           -> TrainConfig

Unknown keys anywhere are refused with the valid ones listed. The ``train`` keys are those
of :data:`attnkit.train_config.KEYS` that :data:`TRAIN_KEYS` lists, with this family's defaults.
"""

from __future__ import annotations

from dataclasses import dataclass

from attnkit.config import family_dict, family_output_dir, from_dict
from attnkit.data.babi import BabiConfig
from attnkit.families.base import ConfigSummary, describe_experiment
from attnkit.models.memn2n import MemN2NConfig
from attnkit.train_config import Row, train_config_class

FAMILY = "memnet"

#: the ``train:`` keys of a memory-network experiment: each one's default here, and what it means
#: here where that differs from the key's general meaning (the keys, their types, rules and
#: order: :data:`attnkit.train_config.KEYS`)
TRAIN_KEYS: dict[str, Row] = {
    "epochs": Row(100, "Most epochs (passes over the training questions); the paper: 100."),
    "batch_size": Row(32, "Questions per update (the paper: 32)."),
    "eval_batch_size": Row(1000, "Questions per forward pass when scoring dev or test."),
    "lr": Row(0.01, "SGD learning rate (the paper: 0.01)."),
    "clip": Row(
        40.0,
        "Clip the gradient norm to this value (the paper: 40; 0 or null: off): all the "
        "weights' together, or each weight's own with clip_each.",
    ),
    "clip_each": Row(
        False,
        "Clip each weight matrix's gradient to train.clip apart (its largest singular "
        "value, as the paper's reference code does) instead of all of them together.",
    ),
    "max_bad_updates": Row(20),
    "scheduler": Row(
        "step",
        "step: multiply by lr_gamma every lr_step_epochs (the paper halves it every 25); constant.",
    ),
    "lr_step_epochs": Row(25),
    "lr_gamma": Row(0.5),
    "warmup_steps": Row(0, "Linear warm-up over this many updates."),
    "patience": Row(
        None,
        "Early stopping: stop after this many epochs without a lower dev error (null: never).",
    ),
    "max_minutes": Row(None),
    "seed": Row(0, "Seed of the initialisation, the batch order and the random noise."),
    "device": Row("cpu", "cpu (the model is tiny: a GPU gains nothing), auto or cuda."),
    "threads": Row(
        1,
        "CPU threads for torch (null or 0: torch's default; the model is tiny: 1 is fastest).",
    ),
    "progress": Row(False),
    "verbose": Row(True),
    "linear_start": Row(
        20,
        "Linear start: the first N epochs train without the softmax of the memory hops "
        "(the paper's LS; 0: off).",
    ),
    "restart_after_linear_start": Row(
        False,
        "Keep train.lr constant through linear start and count the step decay from its "
        "end (the paper's reference code: 20 linear epochs at 0.005, then 100 more "
        "halving every 25); false: one step decay from epoch 0.",
    ),
    "tensorboard": Row(
        True,
        "TensorBoard event files in OUT/tensorboard: scalars, dev figures, hop-by-hop attention.",
    ),
}
#: the values a train key takes, where they are a list
TRAIN_CHOICES = {"scheduler": ("step", "constant"), "device": ("auto", "cpu", "cuda")}

TrainConfig = train_config_class(FAMILY, TRAIN_KEYS, TRAIN_CHOICES, __name__)


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
