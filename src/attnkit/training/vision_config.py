"""The experiment file of the visual attention family.

::

    family: vision
    output_dir: runs/ram_cluttered60              -> where best/ and last/ go
    data:  {task: cluttered, canvas: 60, ...}     -> DataConfig
    model: {type: ram, glimpses: 8, ...}          -> RAMConfig | ReaderConfig | PoolingConfig
    train: {epochs: 100, batch_size: 128, ...}    -> TrainConfig

``model.type`` picks the model (:data:`MODEL_TYPES`, a registry by name, in
:mod:`attnkit.training.vision_families`) and with it the valid keys of the section. Unknown keys
anywhere are rejected with the list of valid ones. The ``train`` keys that a seq2seq experiment
also has mean the same there (``clip``, ``threads``, ``scheduler``, ``min_lr``,
``warmup_steps``, ``backend``, ...); the keys of earlier versions are handled by
:mod:`attnkit.renamed_keys`.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

from attnkit.config import above, at_least, check_values, from_dict, not_below
from attnkit.data.tasks.vision import DataConfig
from attnkit.errors import ConfigError
from attnkit.renamed_keys import upgrade_train_keys
from attnkit.training.vision_families import MODEL_TYPES

FAMILY = "vision"


@dataclass
class TrainConfig:
    """``train:`` how to optimise, when to stop."""

    epochs: int = 50
    """Most epochs (passes over the training images) to run."""
    batch_size: int = 128
    """Images per optimiser step."""
    eval_batch_size: int = 1000
    """Images per forward pass when measuring dev/test error."""
    lr: float = 1e-3
    """Adam learning rate at the start of the schedule."""
    clip: float | None = 5.0
    """Clip the global gradient norm to this value (0 or null: no clipping)."""
    max_bad_updates: int = 20
    """Steps with a NaN/inf loss or gradient norm are skipped; this many in a row end the run."""
    weight_decay: float = 0.0
    """Adam weight decay (L2)."""
    scheduler: str = "cosine"
    """cosine: decay to min_lr over the planned epochs; step: multiply by lr_gamma every
    lr_step_epochs; noam; constant (:mod:`attnkit.training.schedules`)."""
    min_lr: float = 1e-5
    """Cosine: where the rate ends."""
    lr_step_epochs: int = 20
    """Step schedule: epochs between decays."""
    lr_gamma: float = 0.5
    """Step schedule: decay factor."""
    warmup_steps: int = 0
    """Linear warm-up over this many updates (noam: its rise, then 1/sqrt decay)."""
    patience: int | None = 20
    """Early stopping: stop after this many epochs without a lower dev error (null: never)."""
    max_minutes: float | None = None
    """Wall-clock budget for training (null: none); training stops when it is spent."""
    fit_schedule_to_budget: bool = True
    """With max_minutes: shorten the planned epochs (and the LR schedule) to what the budget
    allows."""
    seed: int = 0
    """Seed of the model initialisation and of the batch order."""
    device: str = "auto"
    """auto (CUDA when available), cpu or cuda."""
    threads: int | None = None
    """CPU threads for torch (null or 0: torch's default)."""
    backend: str = "auto"
    """How the training step is computed: auto (eager, with attnkit's C kernels where they fit:
    the additive attention scores on a CPU), reference (plain eager PyTorch, no kernels) or compile
    (torch.compile: fewer, fused kernels; the first steps compile for a minute)."""
    progress: bool = True
    """Show a tqdm progress bar (loss, accuracy, images/s) on stderr, when it is a terminal."""
    verbose: bool = True
    """Print one summary line per epoch on stderr."""
    tensorboard: bool = True
    """TensorBoard event files in OUT/tensorboard: scalars, dev metrics, attention pictures."""

    CHOICES = {
        "scheduler": ("cosine", "step", "noam", "constant"),
        "device": ("auto", "cpu", "cuda"),
        "backend": ("auto", "reference", "compile"),
    }
    RULES = {
        "epochs": at_least(1),
        "batch_size": at_least(1),
        "eval_batch_size": at_least(1),
        "lr": above(0),
        "clip": not_below(0, null=True),
        "max_bad_updates": at_least(1),
        "weight_decay": not_below(0),
        "min_lr": not_below(0),
        "lr_step_epochs": at_least(1),
        "lr_gamma": above(0),
        "warmup_steps": at_least(0),
        "patience": at_least(1, null=True),
        "max_minutes": above(0, null=True),
        "threads": (
            lambda v: v is None or v >= 0,
            "at least 1, or 0 or null for torch's default",
        ),
    }

    def validate(self, where: str) -> None:
        check_values(self, where, self.RULES)

    @property
    def compiled(self) -> bool:
        """True when the training step goes through torch.compile."""
        return self.backend == "compile"


@dataclass
class VisionConfig:
    data: DataConfig
    model: object  # the dataclass of MODEL_TYPES[model_type]
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
    valid = ("family", "output_dir", "data", "model", "train")
    unknown = sorted(set(data) - set(valid), key=repr)  # YAML keys may be numbers or null
    if unknown:
        raise ConfigError(
            f"{source}: unknown key{'s' if len(unknown) > 1 else ''} "
            f"{', '.join(map(repr, unknown))}; valid keys: {', '.join(valid)}"
        )
    if data.get("family", FAMILY) != FAMILY:
        raise ConfigError(
            f"{source}: family: {data.get('family')!r} is not a vision config (family: vision)"
        )
    output_dir = data.get("output_dir")
    output_dir = VisionConfig.output_dir if output_dir is None else output_dir
    if not isinstance(output_dir, str) or not output_dir:
        raise ConfigError(f"{source}: output_dir: expected a directory name, got {output_dir!r}")
    model = dict(data.get("model") or {})
    model_type = model.pop("type", None)
    if model_type not in MODEL_TYPES:
        raise ConfigError(
            f"{source}: model.type: {model_type!r} is not one of {', '.join(MODEL_TYPES)}"
        )
    family = MODEL_TYPES[model_type]
    cfg = VisionConfig(
        data=from_dict(DataConfig, data.get("data"), f"{source}: data"),
        model=from_dict(family.config_cls, model, f"{source}: model"),
        model_type=model_type,
        train=from_dict(TrainConfig, data.get("train"), f"{source}: train"),
        output_dir=output_dir,
    )
    if cfg.data.task not in family.tasks:
        raise ConfigError(
            f"{source}: model.type {model_type!r} reads data.task {' or '.join(family.tasks)}, "
            f"not {cfg.data.task!r}"
        )
    return cfg
