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
from dataclasses import asdict, dataclass
from pathlib import Path

from attnkit.config import from_dict
from attnkit.data.tasks.paths import resolve_data_paths
from attnkit.data.tasks.text import TextDataConfig
from attnkit.errors import ConfigError
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
        return {
            "family": FAMILY,
            "output_dir": self.output_dir,
            "data": asdict(self.data),
            "model": asdict(self.model),
            "train": asdict(self.train),
        }


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
        raise ConfigError(
            f"{source}: family: {data.get('family')!r} is not a text config (family: text)"
        )
    output_dir = data.get("output_dir")
    output_dir = TextConfig.output_dir if output_dir is None else output_dir
    if not isinstance(output_dir, str) or not output_dir:
        raise ConfigError(f"{source}: output_dir: expected a directory name, got {output_dir!r}")
    cfg = TextConfig(
        data=from_dict(TextDataConfig, data.get("data"), f"{source}: data"),
        model=from_dict(TextModelConfig, data.get("model"), f"{source}: model"),
        train=from_dict(TrainConfig, data.get("train"), f"{source}: train"),
        output_dir=output_dir,
    )
    resolve_data_paths(cfg.data, config_dir, command_line, f"{source}: data")
    return cfg
