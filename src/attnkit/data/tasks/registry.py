"""Task name -> its ``data:`` keys, its train/dev/test splits and the metric that judges them."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from attnkit.config import from_dict, join_key, shown
from attnkit.data.location import dataset_dir
from attnkit.data.tasks.base import Pair, Splits
from attnkit.data.tasks.settings import (
    FLAT_DEFAULTS,
    CopyRareData,
    DatesData,
    G2PData,
    ListOpsData,
    Multi30kData,
    NumbersData,
    ParallelData,
    PhrasesData,
    TaskData,
)
from attnkit.errors import AttnkitError, ConfigError

# Each builder imports its task's module when splits are built (dates pulls in Babel), not when
# a config is loaded.


def _numbers(cfg: NumbersData) -> Splits:
    from attnkit.data.tasks import numbers

    if cfg.count > 1:
        return numbers.generate_lists(
            seed=cfg.seed,
            languages=tuple(cfg.languages),
            direction=cfg.direction,
            max_number=cfg.max_number,
            count=cfg.count,
            sizes=(cfg.train_size, cfg.dev_size, cfg.test_size),
        )
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


def _copyrare(cfg: CopyRareData) -> Splits:
    from attnkit.data.tasks import copyrare

    return copyrare.generate(cfg.seed, cfg.train_size, cfg.dev_size, cfg.test_size)


def _listops(cfg: ListOpsData) -> Splits:
    from attnkit.data.tasks import listops

    return listops.generate(
        seed=cfg.seed,
        n_train=cfg.train_size,
        n_dev=cfg.dev_size,
        n_test=cfg.test_size,
        max_depth=cfg.max_depth,
        max_args=cfg.max_args,
        min_length=cfg.min_length,
        max_length=cfg.max_length,
    )


def _phrases(cfg: PhrasesData) -> Splits:
    from attnkit.data.tasks import phrases

    return phrases.generate(
        seed=cfg.seed,
        src_lang=cfg.src_lang,
        tgt_lang=cfg.tgt_lang,
        n_train=cfg.train_size,
        n_dev=cfg.dev_size,
        n_test=cfg.test_size,
        max_adjectives=cfg.max_adjectives,
        sentence_share=cfg.sentence_share,
    )


def _parallel(cfg: ParallelData) -> Splits:
    from attnkit.data.tasks import parallel

    return parallel.load_splits(cfg.train, cfg.dev, cfg.test)


def _parallel_split(cfg: ParallelData, name: str) -> list[Pair]:
    from attnkit.data.tasks import parallel

    return parallel.load_pairs(getattr(cfg, name))


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
class Metric:
    """How a task's outputs are scored, and which score decides."""

    family: str  # exact | g2p | bleu | text: the scores computed (the seq2seq family's evaluate)
    key: str  # the dev score that picks best, stops early, steps the plateau LR, ranks averaging
    higher_is_better: bool


PARALLEL_METRICS: dict[str, Metric] = {
    "exact": Metric("exact", "exact_match", True),
    "bleu": Metric("text", "bleu", True),
    "chrf": Metric("text", "chrf", True),
    "wer": Metric("text", "wer", False),
    "cer": Metric("text", "cer", False),
}
"""``data.metric`` of the parallel task -> its Metric (the keys are settings.PARALLEL_METRICS)."""


@dataclass(frozen=True)
class Task:
    """What training and evaluation need to know about one task."""

    config: type[TaskData]  # the class of its data: section
    build: Callable[[Any], Splits]  # its data config -> its splits
    metric: Metric | None  # None: its data section's `metric` key chooses (PARALLEL_METRICS)
    # (data config, split name) -> that split alone, for tasks that read it from its own file
    build_one: Callable[[Any, str], list[Pair]] | None = None


TASK_REGISTRY: dict[str, Task] = {
    "numbers": Task(NumbersData, _numbers, Metric("exact", "exact_match", True)),
    "dates": Task(DatesData, _dates, Metric("exact", "exact_match", True)),
    "phrases": Task(PhrasesData, _phrases, Metric("exact", "exact_match", True)),
    "copyrare": Task(CopyRareData, _copyrare, Metric("exact", "exact_match", True)),
    "listops": Task(ListOpsData, _listops, Metric("exact", "exact_match", True)),
    "parallel": Task(ParallelData, _parallel, None, _parallel_split),
    "g2p": Task(G2PData, _g2p, Metric("g2p", "wer", False)),
    "multi30k": Task(Multi30kData, _multi30k, Metric("bleu", "bleu", True)),
}

DEFAULT_TASK = "numbers"
"""The task of a ``data:`` section that names none (a person's experiment file must name it)."""


def build_splits(cfg: TaskData) -> Splits:
    """The splits for ``cfg``; generator argument errors become ConfigErrors."""
    try:
        return task_entry(cfg.task).build(cfg)
    except AttnkitError:
        raise
    except ValueError as exc:
        raise ConfigError(f"data: {exc}") from None


def build_split(cfg: TaskData, name: str) -> list[Pair]:
    """The pairs of split ``name`` (train, dev or test): read alone where the task keeps each
    split in its own files, else cut from all three."""
    one = task_entry(cfg.task).build_one
    return one(cfg, name) if one is not None else getattr(build_splits(cfg), name)


def task_entry(task: str) -> Task:
    """The registry entry of ``task``; a ConfigError naming the valid tasks otherwise."""
    try:
        return TASK_REGISTRY[task]
    except KeyError:
        raise ConfigError(
            f"unknown task {shown(task)}; valid: {', '.join(TASK_REGISTRY)}"
        ) from None


def task_metric(cfg: TaskData) -> Metric:
    """How the task of ``cfg`` is scored: its fixed metric, or its ``data.metric``'s."""
    fixed = task_entry(cfg.task).metric
    return fixed if fixed is not None else PARALLEL_METRICS[cfg.metric]


def data_from_dict(section: Any, where: str = "config: data", saved: bool = False) -> TaskData:
    """A ``data:`` mapping -> the config class of its ``task`` (default :data:`DEFAULT_TASK`).

    A key of another task is a ConfigError naming the chosen task's keys; an unknown key is
    one listing them. Files written while the section was one class for every task still load:
    a key of that class (:data:`FLAT_DEFAULTS`) that the task lacks is dropped when it holds
    its old default (a saved ``config.yaml`` trained again), and whatever it holds when
    ``saved`` (the resolved config a checkpoint stores, where those keys were never read). A
    saved config without a key added to its task later (``ADDED_KEYS``) gets the value that
    key's behaviour had before, so an old checkpoint scores as it did.
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
            f"{join_key(where, 'task')}: {shown(task)} is not one of {', '.join(TASK_REGISTRY)}"
        )
    cls = TASK_REGISTRY[task].config
    own = [f.name for f in dataclasses.fields(cls)]
    kept = {}
    if saved:  # written before the task had these keys: what it was run with then
        kept.update({k: v for k, v in cls.ADDED_KEYS.items() if k not in section})
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
