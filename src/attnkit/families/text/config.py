"""The experiment file of the text-classification family.

::

    family: text
    output_dir: runs/sst2_bilstm_attention       -> where best/ and last/ go
    data:  {task: sst, classes: 2, phrases: true} -> TextDataConfig (attnkit.data.tasks.text)
    model: {encoder: bilstm, attention: additive} -> TextModelConfig (models.text_classifier)
    train: {epochs: 10, batch_size: 32, ...}      -> TrainConfig

Unknown keys anywhere are rejected with the list of valid ones. The ``train`` keys are defined
once for every family (:mod:`attnkit.train_config`).
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass
from pathlib import Path

from attnkit.config import family_dict, family_output_dir, from_dict
from attnkit.data.tasks.paths import resolve_data_paths
from attnkit.data.tasks.text import TextDataConfig
from attnkit.models.text_classifier import TextModelConfig
from attnkit.train_config import TEXT, train_config_class

FAMILY = TEXT

#: ``train:`` of a text experiment (its keys and defaults: :data:`attnkit.train_config.KEYS`)
TrainConfig = train_config_class(FAMILY, __name__)


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
