"""The experiment file of the visual attention family.

::

    family: vision
    output_dir: runs/ram_cluttered60              -> where best/ and last/ go
    data:  {task: cluttered, canvas: 60, ...}     -> DataConfig
    model: {type: ram, glimpses: 8, ...}          -> RAMConfig | ReaderConfig | PoolingConfig
    train: {epochs: 100, batch_size: 128, ...}    -> TrainConfig

``model.type`` picks the model (:data:`~attnkit.models.vision.VISION_MODELS`, a registry by
name) and with it the valid keys of the section. Unknown keys
anywhere are rejected with the list of valid ones. The ``train`` keys are defined once for every
family (:mod:`attnkit.train_config`): those a seq2seq experiment also has mean the same there
(``clip``, ``threads``, ``scheduler``, ``min_lr``, ``warmup_steps``, ``backend``, ...); the keys
of earlier versions are handled by :mod:`attnkit.renamed_keys`.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

from attnkit.config import family_output_dir, from_dict, shown
from attnkit.data.tasks.vision import DataConfig
from attnkit.errors import ConfigError
from attnkit.models.vision import VISION_MODELS
from attnkit.renamed_keys import upgrade_train_keys
from attnkit.train_config import VISION, train_config_class

FAMILY = VISION


#: ``train:`` of a vision experiment (its keys and defaults: :data:`attnkit.train_config.KEYS`)
TrainConfig = train_config_class(FAMILY, __name__)


@dataclass
class VisionConfig:
    data: DataConfig
    model: object  # the dataclass of VISION_MODELS[model_type]
    model_type: str
    train: TrainConfig
    output_dir: str = "runs/vision"  # run directory (best/ and last/) when the caller gives none

    def to_dict(self) -> dict:
        return {
            "family": FAMILY,
            "output_dir": self.output_dir,
            "data": asdict(self.data),
            "model": {"type": self.model_type, **asdict(self.model)},
            "train": asdict(self.train),
        }


def parse_config(data: dict, source: str = "config", user: bool = True) -> VisionConfig:
    """A parsed YAML mapping -> :class:`VisionConfig`; ConfigError naming ``source`` and the key.

    ``user=False`` reads a checkpoint's saved config, whose train keys of an earlier version are
    translated instead of refused.
    """
    if not isinstance(data, dict):
        raise ConfigError(f"{source}: the top level must be a mapping of sections")
    data = upgrade_train_keys(data, source, user)
    output_dir = family_output_dir(data, source, FAMILY, VisionConfig.output_dir)
    model = dict(data.get("model") or {})
    model_type = model.pop("type", None)
    if model_type not in VISION_MODELS:
        raise ConfigError(
            f"{source}: model.type: {shown(model_type)} is not one of {', '.join(VISION_MODELS)}"
        )
    family = VISION_MODELS[model_type]
    cfg = VisionConfig(
        data=from_dict(DataConfig, data.get("data"), f"{source}: data"),
        model=from_dict(family.config_cls, model, f"{source}: model"),
        model_type=model_type,
        train=from_dict(TrainConfig, data.get("train"), f"{source}: train"),
        output_dir=output_dir,
    )
    if cfg.data.task not in family.tasks:
        raise ConfigError(
            f"{source}: model.type {shown(model_type)} reads data.task "
            f"{' or '.join(family.tasks)}, "
            f"not {cfg.data.task!r}"
        )
    return cfg
