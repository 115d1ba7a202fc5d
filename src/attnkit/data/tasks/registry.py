"""Task name -> its ``data:`` keys, its train/dev/test splits and the metric that judges them."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from attnkit.config import from_dict, join_key
from attnkit.data.location import dataset_dir
from attnkit.data.tasks.base import Splits
from attnkit.data.tasks.settings import (
    FLAT_DEFAULTS,
    DatesData,
    G2PData,
    Multi30kData,
    NumbersData,
    ParallelData,
    TaskData,
)
from attnkit.errors import AttnkitError, ConfigError

# Each builder imports its task's module when splits are built (dates pulls in Babel), not when
# a config is loaded.


def _numbers(cfg: NumbersData) -> Splits:
    from attnkit.data.tasks import numbers

    return numbers.generate(
        seed=cfg.seed,
        languages=tuple(cfg.languages),
        direction=cfg.direction,
        max_number=cfg.max_number,
    )


def _dates(cfg: DatesData) -> Splits:
    from attnkit.data.tasks import dates

    return dates.generate(
        seed=cfg.seed, n_train=cfg.train_size, n_dev=cfg.dev_size, n_test=cfg.test_size
    )


def _parallel(cfg: ParallelData) -> Splits:
    from attnkit.data.tasks import parallel

    return parallel.load_splits(cfg.train, cfg.dev, cfg.test)


def _g2p(cfg: G2PData) -> Splits:
    from attnkit.data.tasks import g2p

    return g2p.load(dataset_dir("cmudict", cfg.directory), download=cfg.download)


def _multi30k(cfg: Multi30kData) -> Splits:
    from attnkit.data.tasks import multi30k

    directory = dataset_dir("multi30k", cfg.directory)
    return multi30k.load(
        directory, src_lang=cfg.src_lang, tgt_lang=cfg.tgt_lang, download=cfg.download
    )


@dataclass(frozen=True)
class Task:
    """What training and evaluation need to know about one task."""

    config: type[TaskData]  # the class of its data: section
    build: Callable[[Any], Splits]  # its data config -> its splits
    metric_family: str  # exact | g2p | bleu (attnkit.evaluation.metrics)
    metric: str  # the primary metric: the key of the dev score that picks the best checkpoint
    higher_is_better: bool


TASK_REGISTRY: dict[str, Task] = {
    "numbers": Task(NumbersData, _numbers, "exact", "exact_match", True),
    "dates": Task(DatesData, _dates, "exact", "exact_match", True),
    "parallel": Task(ParallelData, _parallel, "exact", "exact_match", True),
    "g2p": Task(G2PData, _g2p, "g2p", "wer", False),
    "multi30k": Task(Multi30kData, _multi30k, "bleu", "bleu", True),
}

DEFAULT_TASK = "numbers"
"""The task of a ``data:`` section that names none (a person's experiment file must name it)."""


def build_splits(cfg: TaskData) -> Splits:
    """The splits for ``cfg``; generator argument errors become ConfigErrors."""
    builder = task_info(cfg.task)[0]
    try:
        return builder(cfg)
    except AttnkitError:
        raise
    except ValueError as exc:
        raise ConfigError(f"data: {exc}") from None


def task_info(task: str) -> tuple[Callable, str, str, bool]:
    """``(split builder, metric family, primary metric, higher is better)`` of ``task``."""
    try:
        entry = TASK_REGISTRY[task]
    except KeyError:
        raise ConfigError(f"unknown task {task!r}; valid: {', '.join(TASK_REGISTRY)}") from None
    return entry.build, entry.metric_family, entry.metric, entry.higher_is_better


def data_from_dict(section: Any, where: str = "config: data", saved: bool = False) -> TaskData:
    """A ``data:`` mapping -> the config class of its ``task`` (default :data:`DEFAULT_TASK`).

    A key of another task is a ConfigError naming the chosen task's keys; an unknown key is
    one listing them. Files written while the section was one class for every task still load:
    a key of that class (:data:`FLAT_DEFAULTS`) that the task lacks is dropped when it holds
    its old default (a saved ``config.yaml`` trained again), and whatever it holds when
    ``saved`` (the resolved config a checkpoint stores, where those keys were never read).
    """
    if section is None:
        section = {}
    if not isinstance(section, dict):
        raise ConfigError(
            f"{where}: expected a mapping of keys to values, got {type(section).__name__}"
        )
    task = section.get("task", DEFAULT_TASK)
    if not isinstance(task, str) or task not in TASK_REGISTRY:
        raise ConfigError(
            f"{join_key(where, 'task')}: {task!r} is not one of {', '.join(TASK_REGISTRY)}"
        )
    cls = TASK_REGISTRY[task].config
    own = [f.name for f in dataclasses.fields(cls)]
    kept = {}
    for name, value in section.items():
        if name in own or name not in _keys_of_any_task():
            kept[name] = value  # from_dict checks it (and names an unknown key)
        elif name in FLAT_DEFAULTS and (saved or value == FLAT_DEFAULTS[name]):
            continue
        else:
            raise ConfigError(
                f"{join_key(where, name)}: not a key of task {task} (its keys: {', '.join(own)})"
            )
    return from_dict(cls, kept, where)


def _keys_of_any_task() -> set[str]:
    return {f.name for task in TASK_REGISTRY.values() for f in dataclasses.fields(task.config)}
