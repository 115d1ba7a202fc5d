"""The seq2seq experiment file: sections ``data``, ``model``, ``train``, ``decode``.

Each section is a typed dataclass (``data``: the class of its task, from
:mod:`attnkit.data.tasks.registry`; ``model``: the class of its ``arch``, from
:mod:`attnkit.models.architectures`); :func:`load_experiment` reads YAML, applies
``--set`` overrides and rejects unknown keys or bad values with the file and
key named. ``configs/*.yaml`` document every key.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from attnkit.accel.backend import BACKENDS
from attnkit.config import (
    apply_overrides,
    at_least,
    check_applicable,
    check_values,
    from_dict,
    not_below,
    read_yaml,
    shown,
    to_dict,
)
from attnkit.config import join_key as _key
from attnkit.data.tasks.paths import command_line_data_keys, resolve_data_paths
from attnkit.data.tasks.registry import TASK_REGISTRY, data_from_dict
from attnkit.data.tasks.settings import NumbersData, TaskData
from attnkit.errors import ConfigError
from attnkit.models.architectures import ModelConfig, model_config_from_dict
from attnkit.models.seq2seq import Seq2SeqConfig
from attnkit.renamed_keys import upgrade_train_keys
from attnkit.train_config import Row, train_config_class
from attnkit.training.precision import PRECISIONS

#: the ``train:`` keys of a seq2seq experiment: each one's default here, and what it means
#: here where that differs from the key's general meaning (the keys, their types, rules and
#: order: :data:`attnkit.train_config.KEYS`)
TRAIN_KEYS: dict[str, Row] = {
    "epochs": Row(30, "most passes over the training data"),
    "batch_size": Row(
        64,
        "sentences per batch (or use max_tokens)",
        type=int | None,  # null: max_tokens makes the batches
        rule=at_least(1, null=True),
    ),
    "max_tokens": Row(None),
    "lr": Row(1e-3, "Adam learning rate (the peak, after warm-up)"),
    "clip": Row(1.0, "gradient-norm clipping (0 or null = off)"),
    "max_bad_updates": Row(
        20,
        "an update with a NaN/inf loss or gradient norm is skipped; this many in a row "
        "stop the run",
    ),
    "label_smoothing": Row(0.0),
    "scheduler": Row("plateau", "plateau | cosine | constant | noam (attnkit.training.schedules)"),
    "lr_factor": Row(0.5),
    "lr_patience": Row(1),
    "min_lr": Row(1e-5, "plateau: never below this; cosine: where it ends"),
    "warmup_steps": Row(
        0,
        "linear warm-up over this many updates (constant, cosine; noam rises over them, "
        "then decays)",
    ),
    "patience": Row(5, "early stopping: evaluations without improvement (None = never stop early)"),
    "average_checkpoints": Row(
        0,
        "N >= 2: keep the N best evaluations in run_dir/top, average them into run_dir/averaged",
    ),
    "eval_every": Row(0),
    "max_minutes": Row(
        None,
        "time budget for training, in minutes: the run's total, its resumed parts "
        "included (2.5 on resuming a run that trained 2.2 gives 0.3 more)",
    ),
    "seed": Row(1, "seed of the initialisation, the batch order and dropout"),
    "device": Row("auto", "auto | cpu | cuda"),
    "threads": Row(0, "torch CPU threads (0 or null = torch's default)"),
    "backend": Row(
        "auto",
        "how the model is computed (attnkit.accel.backend): auto | reference | fused | "
        "native | compile",
    ),
    "precision": Row(
        "fp32",
        "fp32 | bf16 | fp16: the training forward's precision (bf16: autocast on a CPU or CUDA; "
        "fp16: autocast with loss scaling, CUDA only); weights, checkpoints and decoding stay "
        "float32; bf16 or fp16 trains the RNN through the autograd path (backend auto picks "
        "fused; native is refused)",
    ),
    "progress": Row(True),
    "verbose": Row(True),
    "tensorboard": Row(True, "event files in run_dir/tensorboard: scalars, dev metrics, attention"),
}
#: the values a train key takes, where they are a list
TRAIN_CHOICES = {
    "scheduler": ("plateau", "cosine", "constant", "noam"),
    "device": ("auto", "cpu", "cuda"),
    "backend": BACKENDS,
    "precision": PRECISIONS,
}

TrainConfig = train_config_class("seq2seq", TRAIN_KEYS, TRAIN_CHOICES, __name__)


@dataclass
class DecodeConfig:
    beam_size: int = 5
    alpha: float = 1.0  # length penalty exponent ((5 + len) / 6) ** alpha
    n_best: int = 1
    max_len_ratio: float = 2.0  # output limit = ratio * source length + extra, at most cap
    max_len_extra: int = 10
    max_len_cap: int = 300
    batch_size: int = 128
    backend: str = "auto"  # translate/evaluate: auto | reference | fused | native | compile

    CHOICES = {"backend": BACKENDS}
    RULES = {
        "beam_size": at_least(1),
        "alpha": not_below(0),
        "n_best": at_least(1),
        "max_len_ratio": not_below(0),
        "max_len_extra": at_least(0),
        "max_len_cap": at_least(1),
        "batch_size": at_least(1),
    }

    def validate(self, where: str) -> None:
        check_values(self, where, self.RULES)
        if self.n_best > self.beam_size:
            raise ConfigError(f"{where}: need beam_size >= 1 and 1 <= n_best <= beam_size")


@dataclass
class ExperimentConfig:
    name: str = "experiment"
    family: str = "seq2seq"
    output_dir: str | None = None  # default runs/<name>
    data: TaskData = field(default_factory=NumbersData)  # the class of data.task's registry entry
    model: ModelConfig = field(default_factory=Seq2SeqConfig)  # the class of model.arch
    train: TrainConfig = field(default_factory=TrainConfig)
    decode: DecodeConfig = field(default_factory=DecodeConfig)

    CHOICES = {"family": ("seq2seq",)}

    @property
    def run_dir(self) -> Path:
        return Path(self.output_dir) if self.output_dir else Path("runs") / self.name


def experiment_from_dict(
    data: dict,
    overrides: Iterable[str] = (),
    source: str = "config",
    user: bool = False,
    config_dir: str | Path | None = None,
) -> ExperimentConfig:
    """A mapping + ``--set`` overrides -> a validated ExperimentConfig.

    ``user=True`` for what a person wrote (an experiment file, ``--set``), not
    a checkpoint's saved resolved config: it must name ``data.task``, its
    ``name`` must be a plain directory name, and keys it gives that its other
    settings ignore (``model.heads`` with luong-dot attention) are errors. The
    ``data`` section is the class of its task, and a key of another task is an
    error (:func:`attnkit.data.tasks.registry.data_from_dict` says which keys of
    configs written before the section was split by task are dropped instead). A person's
    relative data paths become absolute, read from ``config_dir`` (the experiment file's
    directory; the current directory for ``--set`` values and when None), so that the config a
    checkpoint saves finds its files from anywhere (:mod:`attnkit.data.tasks.paths`).
    """
    overrides = list(overrides)
    data = upgrade_train_keys(apply_overrides(data, overrides), source, user)
    _drop_processes(data, source, user)
    cfg = from_dict(
        ExperimentConfig, {k: v for k, v in data.items() if k not in ("data", "model")}, source
    )
    # model.arch picks the class of the model section (attnkit.models.architectures)
    cfg.model = model_config_from_dict(data.get("model"), _key(source, "model"))
    if user:
        _check_task_named(data, source)
    # data.task picks the class of the data section (attnkit.data.tasks.registry)
    cfg.data = data_from_dict(data.get("data"), _key(source, "data"), saved=not user)
    check_lengths = getattr(cfg.model, "check_lengths", None)  # a learned position table's rows
    if check_lengths is not None:
        check_lengths(cfg.data.max_src_len, cfg.data.max_tgt_len, _key(source, "model"))
    if user:
        _check_user_config(data, cfg, source)
        from_command_line = command_line_data_keys(overrides)
        resolve_data_paths(cfg.data, config_dir, from_command_line, _key(source, "data"))
    return cfg


def _drop_processes(data: dict, source: str, user: bool) -> None:
    """Remove the retired ``train.processes`` from ``data`` (in place).

    Its data-parallel processes are now torchrun's: ``processes: 1`` (every config and
    checkpoint before the change holds it) means nothing and is dropped, as is any value a
    checkpoint saved; a user's N > 1 is an error naming the command that does it now.
    """
    section = data.get("train")
    if not isinstance(section, dict) or "processes" not in section:
        return
    value = section.pop("processes")
    if user and not (type(value) is int and value == 1):  # `true` is not 1 here
        n = value if isinstance(value, int) and not isinstance(value, bool) and value > 1 else "N"
        raise ConfigError(
            f"{_key(_key(source, 'train'), 'processes')}: {shown(value)} is no longer a "
            f"setting; remove it and start {n} data-parallel processes with "
            f"torchrun --nproc_per_node {n} -m attnkit train CONFIG"
        )


def _check_task_named(data: dict, source: str) -> None:
    """A person's file names its task: without it, one used to train the default task."""
    section = data.get("data")
    if not isinstance(section, dict) or "task" not in section:
        raise ConfigError(
            f"{_key(_key(source, 'data'), 'task')}: missing; name the task to learn "
            f"({' | '.join(TASK_REGISTRY)})"
        )


def _check_user_config(data: dict, cfg: ExperimentConfig, source: str) -> None:
    name = cfg.name
    if not name.strip() or name in (".", "..") or "/" in name or "\\" in name:
        raise ConfigError(
            f"{_key(source, 'name')}: {shown(name)} is not a plain directory name "
            "(runs go to runs/<name>; set output_dir to write anywhere else)"
        )
    check_applicable(cfg, data, source)


def load_experiment(path: str | Path, overrides: Iterable[str] = ()) -> ExperimentConfig:
    """YAML file + ``--set`` overrides -> a validated ExperimentConfig, checked as a user's file
    (relative data paths read from the file's directory)."""
    return experiment_from_dict(
        read_yaml(path), overrides, source=str(path), user=True, config_dir=Path(path).parent
    )


def experiment_to_dict(cfg: ExperimentConfig) -> dict:
    """The config as plain dicts (what checkpoints store as config.yaml)."""
    return to_dict(cfg)
