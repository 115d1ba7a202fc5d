"""The experiment file: sections ``data``, ``model``, ``train``, ``decode``.

Each section is a typed dataclass; :func:`load_experiment` reads YAML, applies
``--set`` overrides and rejects unknown keys or bad values with the file and
key named. ``configs/*.yaml`` document every key.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from attnkit.accel.backend import BACKENDS
from attnkit.config import (
    above,
    apply_overrides,
    at_least,
    between,
    check_applicable,
    check_values,
    from_dict,
    not_below,
    read_yaml,
    to_dict,
)
from attnkit.config import join_key as _key
from attnkit.errors import ConfigError
from attnkit.models.seq2seq import Seq2SeqConfig
from attnkit.training.renamed_keys import upgrade_train_keys

TASKS = ("numbers", "dates", "parallel", "g2p", "multi30k")
LEVELS = ("char", "word", "sentencepiece")


@dataclass
class DataConfig:
    task: str = "numbers"
    seed: int = 0  # generated tasks and splits are a function of this seed
    # numbers
    languages: list[str] = field(default_factory=lambda: ["en", "de", "fr", "es"])
    direction: str = "words2digits"  # words2digits | digits2words | both
    max_number: int = 999
    # dates
    train_size: int = 20000
    dev_size: int = 1000
    test_size: int = 1000
    # parallel: a .tsv file or [source_file, target_file] per split
    train: str | list[str] | None = None
    dev: str | list[str] | None = None
    test: str | list[str] | None = None
    # g2p / multi30k
    directory: str | None = None
    download: bool = False
    src_lang: str = "de"
    tgt_lang: str = "en"
    # tokenization
    src_level: str = "char"
    tgt_level: str = "char"
    lowercase: bool = False
    vocab_size: int = 8000  # sentencepiece only
    max_src_len: int = 100  # tokens; longer inputs follow `overlong`
    max_tgt_len: int = 100
    overlong: str = "truncate"  # truncate | skip | error

    CHOICES = {
        "task": TASKS,
        "direction": ("words2digits", "digits2words", "both"),
        "src_level": LEVELS,
        "tgt_level": LEVELS,
        "overlong": ("truncate", "skip", "error"),
    }
    #: keys that only some tasks read (given for another task: an error, see check_applicable)
    APPLIES = {
        **{name: ("task", ("numbers",)) for name in ("languages", "direction", "max_number")},
        **{name: ("task", ("dates",)) for name in ("train_size", "dev_size", "test_size")},
        **{name: ("task", ("parallel",)) for name in ("train", "dev", "test")},
        **{name: ("task", ("g2p", "multi30k")) for name in ("directory", "download")},
        **{name: ("task", ("multi30k",)) for name in ("src_lang", "tgt_lang")},
    }

    def validate(self, where: str) -> None:
        if self.task == "parallel" and not (self.train and self.dev and self.test):
            raise ConfigError(f"{where}: task 'parallel' needs data.train, data.dev and data.test")
        if self.task in ("g2p", "multi30k") and not self.directory:
            raise ConfigError(
                f"{_key(where, 'directory')}: task {self.task!r} needs the directory holding its "
                "files"
            )
        sizes = ("max_tgt_len", "vocab_size", "max_number", "train_size", "dev_size", "test_size")
        check_values(self, where, {name: at_least(1) for name in sizes})
        if self.max_src_len < 2:
            raise ConfigError(
                f"{_key(where, 'max_src_len')}: must be at least 2 (one token and </s>)"
            )


@dataclass
class TrainConfig:
    epochs: int = 30
    batch_size: int | None = 64  # sentences per batch (or use max_tokens)
    max_tokens: int | None = None  # padded tokens per batch; overrides batch_size
    lr: float = 0.001
    clip: float | None = 1.0  # gradient-norm clipping (0 or null = off)
    # an update with a NaN/inf loss or gradient norm is skipped; this many in a row stop the run
    max_bad_updates: int = 20
    label_smoothing: float = 0.0
    # plateau | cosine | constant | noam (attnkit.training.schedules)
    scheduler: str = "plateau"
    lr_factor: float = 0.5  # plateau: multiply the LR by this ...
    lr_patience: int = 1  # ... after this many evaluations without improvement
    min_lr: float = 1.0e-5  # plateau: never below this; cosine: where it ends
    # linear warm-up over this many updates (constant, cosine; noam rises over them, then decays)
    warmup_steps: int = 0
    patience: int | None = (
        5  # early stopping: evaluations without improvement (None = never stop early)
    )
    average_checkpoints: int = (
        0  # N >= 2: keep the N best evaluations in run_dir/top, average them into run_dir/averaged
    )
    eval_every: int = 0  # updates between dev evaluations (0 = once per epoch)
    max_minutes: float | None = None  # time budget for training
    seed: int = 1
    device: str = "auto"  # auto | cpu | cuda
    threads: int | None = 0  # torch CPU threads (0 or null = torch's default)
    # how the model is computed (attnkit.accel.backend): auto | reference | fused | native | compile
    backend: str = "auto"
    progress: bool = True
    tensorboard: bool = True  # event files in run_dir/tensorboard: scalars, dev metrics, attention

    CHOICES = {
        "scheduler": ("plateau", "cosine", "constant", "noam"),
        "device": ("auto", "cpu", "cuda"),
        "backend": BACKENDS,
    }

    RULES = {
        "epochs": at_least(1),
        "batch_size": at_least(1, null=True),
        "max_tokens": at_least(1, null=True),
        "lr": above(0),
        "clip": not_below(0, null=True),
        "label_smoothing": between(0, 1),
        "lr_factor": (lambda v: 0 < v < 1, "in (0, 1)"),  # torch's plateau schedule refuses >= 1
        "lr_patience": at_least(0),
        "min_lr": not_below(0),
        "warmup_steps": at_least(0),
        "patience": at_least(1, null=True),  # null: no early stopping
        "average_checkpoints": at_least(0),
        "eval_every": at_least(0),
        "max_minutes": above(0, null=True),
        "threads": (
            lambda v: v is None or v >= 0,
            "at least 1, or 0 or null for torch's default",
        ),
        "max_bad_updates": at_least(1),
    }

    def validate(self, where: str) -> None:
        if self.batch_size is None and self.max_tokens is None:
            raise ConfigError(f"{where}: set batch_size or max_tokens")
        check_values(self, where, self.RULES)


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
    data: DataConfig = field(default_factory=DataConfig)
    model: Seq2SeqConfig = field(default_factory=Seq2SeqConfig)
    train: TrainConfig = field(default_factory=TrainConfig)
    decode: DecodeConfig = field(default_factory=DecodeConfig)

    CHOICES = {"family": ("seq2seq",)}

    @property
    def run_dir(self) -> Path:
        return Path(self.output_dir) if self.output_dir else Path("runs") / self.name


def experiment_from_dict(
    data: dict, overrides: Iterable[str] = (), source: str = "config", user: bool = False
) -> ExperimentConfig:
    """A mapping + ``--set`` overrides -> a validated ExperimentConfig.

    ``user=True`` for what a person wrote (an experiment file, ``--set``), not
    a checkpoint's saved resolved config: it must name ``data.task``, its
    ``name`` must be a plain directory name, and keys it gives that its other
    settings ignore (``model.heads`` with luong-dot attention) are errors.
    """
    data = upgrade_train_keys(apply_overrides(data, overrides), source, user)
    _drop_processes(data, source, user)
    cfg = from_dict(ExperimentConfig, data, where=source)
    if user:
        _check_user_config(data, cfg, source)
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
            f"{_key(_key(source, 'train'), 'processes')}: {value!r} is no longer a "
            f"setting; remove it and start {n} data-parallel processes with "
            f"torchrun --nproc_per_node {n} -m attnkit train CONFIG"
        )


def _check_user_config(data: dict, cfg: ExperimentConfig, source: str) -> None:
    section = data.get("data")
    if not isinstance(section, dict) or "task" not in section:
        raise ConfigError(
            f"{_key(_key(source, 'data'), 'task')}: missing; name the task to learn "
            f"({' | '.join(TASKS)})"
        )
    name = cfg.name
    if not name.strip() or name in (".", "..") or "/" in name or "\\" in name:
        raise ConfigError(
            f"{_key(source, 'name')}: {name!r} is not a plain directory name "
            "(runs go to runs/<name>; set output_dir to write anywhere else)"
        )
    check_applicable(cfg, data, source)


def load_experiment(path: str | Path, overrides: Iterable[str] = ()) -> ExperimentConfig:
    """YAML file + ``--set`` overrides -> a validated ExperimentConfig, checked as a user's file."""
    return experiment_from_dict(read_yaml(path), overrides, source=str(path), user=True)


def experiment_to_dict(cfg: ExperimentConfig) -> dict:
    """The config as plain dicts (what checkpoints store as config.yaml)."""
    return to_dict(cfg)
