"""The experiment file of the text-classification family.

::

    family: text
    output_dir: runs/sst2_bilstm_attention       -> where best/ and last/ go
    data:  {task: sst, classes: 2, phrases: true} -> TextDataConfig (attnkit.data.tasks.text)
    model: {encoder: bilstm, attention: additive} -> TextModelConfig (models.text_classifier)
    train: {epochs: 10, batch_size: 32, ...}      -> TrainConfig

Unknown keys anywhere are rejected with the list of valid ones. The ``train`` keys are those of
:data:`attnkit.train_config.KEYS` that :data:`TRAIN_KEYS` lists, with this family's defaults.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass
from pathlib import Path

from attnkit.config import family_dict, family_output_dir, from_dict
from attnkit.data.tasks.paths import resolve_data_paths
from attnkit.data.tasks.text import TextDataConfig
from attnkit.models.text_classifier import TextModelConfig
from attnkit.train_config import Row, train_config_class

FAMILY = "text"

#: the ``train:`` keys of a text experiment: each one's default here, and what it means
#: here where that differs from the key's general meaning (the keys, their types, rules and
#: order: :data:`attnkit.train_config.KEYS`)
TRAIN_KEYS: dict[str, Row] = {
    "epochs": Row(10, "Most epochs (passes over the training sentences or phrases) to run."),
    "batch_size": Row(32, "Sentences (or phrases) per update."),
    "eval_batch_size": Row(256, "Sentences per forward pass when scoring dev and test."),
    "lr": Row(1e-3, "Adam learning rate at the start of the schedule."),
    "clip": Row(5.0),
    "max_bad_updates": Row(20),
    "weight_decay": Row(0.0),
    "scheduler": Row(
        "constant",
        "constant; cosine: decay to min_lr over the planned epochs; noam "
        "(:mod:`attnkit.training.schedules`).",
    ),
    "min_lr": Row(1e-5),
    "warmup_steps": Row(0),
    "patience": Row(
        3,
        "Early stopping: stop after this many evaluations (epochs, or every eval_every "
        "updates) without a higher dev accuracy (null: never).",
    ),
    "average_checkpoints": Row(
        0,
        "N >= 2: keep the N best dev evaluations in output_dir/top; at the end the best "
        "of their means (or the best single one) is output_dir/averaged",
    ),
    "eval_every": Row(0),
    "max_minutes": Row(None),
    "seed": Row(0, "Seed of the model initialisation, dropout and the batch order."),
    "device": Row("auto"),
    "threads": Row(None),
    "progress": Row(True),
    "verbose": Row(True),
    "tensorboard": Row(
        True,
        "TensorBoard event files in OUT/tensorboard: scalars, dev accuracy, the "
        "attention over a few dev sentences.",
    ),
}
#: the values a train key takes, where they are a list
TRAIN_CHOICES = {"scheduler": ("constant", "cosine", "noam"), "device": ("auto", "cpu", "cuda")}

TrainConfig = train_config_class(FAMILY, TRAIN_KEYS, TRAIN_CHOICES, __name__)


@dataclass
class TextConfig:
    data: TextDataConfig
    model: TextModelConfig
    train: TrainConfig
    output_dir: str = "runs/text"  # run directory (best/ and last/) when the caller gives none

    def to_dict(self) -> dict:
        return family_dict(
            FAMILY, self.output_dir, data=self.data, model=self.model, train=self.train
        )


def parse_config(
    data: dict,
    source: str = "config",
    config_dir: str | Path | None = None,
    command_line: Collection[str] = (),
) -> TextConfig:
    """A parsed YAML mapping -> :class:`TextConfig`; ConfigError naming ``source`` and the key.

    Relative data paths are read from ``config_dir`` (the experiment file's directory; those
    ``--set`` gave, named in ``command_line``, from the current directory) and made absolute.
    """
    output_dir = family_output_dir(data, source, FAMILY, TextConfig.output_dir)
    cfg = TextConfig(
        data=from_dict(TextDataConfig, data.get("data"), f"{source}: data"),
        model=from_dict(TextModelConfig, data.get("model"), f"{source}: model"),
        train=from_dict(TrainConfig, data.get("train"), f"{source}: train"),
        output_dir=output_dir,
    )
    resolve_data_paths(cfg.data, config_dir, command_line, f"{source}: data")
    return cfg
