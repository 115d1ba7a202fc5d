"""The experiment file of the visual attention family.

::

    family: vision
    output_dir: runs/ram_cluttered60              -> where best/ and last/ go
    data:  {task: cluttered, canvas: 60, ...}     -> DataConfig
    model: {type: ram, glimpses: 8, ...}          -> RAMConfig | ReaderConfig | PoolingConfig
    train: {epochs: 100, batch_size: 128, ...}    -> TrainConfig

``model.type`` picks the model (:data:`~attnkit.models.vision.VISION_MODELS`, a registry by
name) and with it the valid keys of the section. Unknown keys
anywhere are rejected with the list of valid ones. The ``train`` keys are those of
:data:`attnkit.train_config.KEYS` that :data:`TRAIN_KEYS` lists, with this family's defaults:
those a seq2seq experiment also has mean the same there
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
from attnkit.train_config import Row, train_config_class

FAMILY = "vision"


#: the ``train:`` keys of a vision experiment: each one's default here, and what it means
#: here where that differs from the key's general meaning (the keys, their types, rules and
#: order: :data:`attnkit.train_config.KEYS`)
TRAIN_KEYS: dict[str, Row] = {
    "epochs": Row(50, "Most epochs (passes over the training images) to run."),
    "batch_size": Row(128, "Images per optimiser step."),
    "eval_batch_size": Row(1000, "Images per forward pass when measuring dev/test error."),
    "lr": Row(1e-3, "Adam learning rate at the start of the schedule."),
    "clip": Row(5.0),
    "max_bad_updates": Row(
        20,
        "Steps with a NaN/inf loss or gradient norm are skipped; this many in a row end the run.",
    ),
    "weight_decay": Row(0.0),
    "scheduler": Row(
        "cosine",
        "cosine: decay to min_lr over the planned epochs; step: multiply by lr_gamma "
        "every lr_step_epochs; noam; constant (:mod:`attnkit.training.schedules`).",
    ),
    "min_lr": Row(1e-5),
    "lr_step_epochs": Row(20),
    "lr_gamma": Row(0.5),
    "warmup_steps": Row(0),
    "patience": Row(
        20,
        "Early stopping: stop after this many epochs without a lower dev error (null: never).",
    ),
    "max_minutes": Row(
        None,
        "Wall-clock budget for training (null: none); training stops when it is spent. "
        "It is the run's total, its resumed parts included.",
    ),
    "fit_schedule_to_budget": Row(
        True,
        "With max_minutes: shorten the planned epochs (and the LR schedule) to what the "
        "budget allows.",
    ),
    "seed": Row(0, "Seed of the model initialisation and of the batch order."),
    "device": Row("auto"),
    "threads": Row(None),
    "backend": Row(
        "auto",
        "How the training step is computed: auto (eager, with attnkit's C kernels where "
        "they fit: the additive attention scores on a CPU), reference (plain eager "
        "PyTorch, no kernels) or compile (torch.compile: fewer, fused kernels; the first "
        "steps compile for a minute).",
    ),
    "progress": Row(True),
    "verbose": Row(True),
    "tensorboard": Row(True),
}
#: the values a train key takes, where they are a list
TRAIN_CHOICES = {
    "scheduler": ("cosine", "step", "noam", "constant"),
    "device": ("auto", "cpu", "cuda"),
    "backend": ("auto", "reference", "compile"),
}

TrainConfig = train_config_class(FAMILY, TRAIN_KEYS, TRAIN_CHOICES, __name__)


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
