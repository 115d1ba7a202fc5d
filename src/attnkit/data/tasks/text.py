"""The ``data:`` section of a text-classification experiment, its splits and its batches.

::

    data: {task: sst, classes: 2, phrases: true}                  # SST-2, phrase-level training
    data: {task: tsv, train: train.tsv, dev: dev.tsv, test: test.tsv}   # label<TAB>text files

The files are read by :mod:`attnkit.data.tasks.sst`. :func:`encode` turns sentences into the
model's ``tokens (B, S)`` and ``mask (B, S)`` (True = a real word); :func:`length_batches` cuts
a split into batches of similar lengths, shuffled.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass

import torch
from torch import Tensor

from attnkit.config import join_key
from attnkit.data.location import checkpoint_data, dataset_dir
from attnkit.data.tasks import sst
from attnkit.data.vocab import PAD_ID, Vocab
from attnkit.errors import ConfigError, DataError

TASKS = ("sst", "tsv")


@dataclass
class TextDataConfig:
    """``data:`` of a text experiment."""

    task: str = "sst"  # sst (the Stanford Sentiment Treebank) | tsv (your label<TAB>text files)
    classes: int = 2  # sst: 2 (SST-2, neutral dropped) or 5 (SST-5)
    phrases: bool = False  # sst: train on every phrase of the training trees, not sentences only
    directory: str | None = None  # sst: its directory; null: $ATTNKIT_DATA_DIR/sst, else the cache
    train: str | None = None  # tsv: the training file (relative: to the experiment file)
    dev: str | None = None  # tsv: the dev file (chooses the best checkpoint)
    test: str | None = None  # tsv: the test file
    labels: list[str] | None = None  # tsv: the labels, in order; null: the training file's, sorted
    lowercase: bool = True  # lowercase every word (the vocabulary is case-free)

    CHOICES = {"task": TASKS, "classes": (2, 5)}
    PATH_KEYS = ("directory", "train", "dev", "test")

    def validate(self, where: str) -> None:
        files = [k for k in ("train", "dev", "test") if getattr(self, k) is not None]
        if self.task == "tsv":
            missing = [k for k in ("train", "dev", "test") if getattr(self, k) is None]
            if missing:
                raise ConfigError(f"{join_key(where, missing[0])}: task tsv needs a file")
        elif files or self.labels is not None:
            key = files[0] if files else "labels"
            raise ConfigError(f"{join_key(where, key)}: for task tsv only (task is {self.task})")


class TextData:
    """The splits of a text experiment: ``split(name)`` -> examples, ``labels`` (class names)."""

    def __init__(self, cfg: TextDataConfig):
        self.cfg = cfg
        if cfg.task == "sst":
            directory = dataset_dir("sst", cfg.directory)
            self.splits = sst.sst_splits(directory, cfg.classes, cfg.phrases, cfg.lowercase)
            self.labels = list(sst.SST2_LABELS if cfg.classes == 2 else sst.SST5_LABELS)
        else:
            train, self.labels = sst.read_tsv(cfg.train, cfg.labels, cfg.lowercase)
            self.splits = {"train": train}
            for name in ("dev", "test"):
                self.splits[name] = sst.read_tsv(getattr(cfg, name), self.labels, cfg.lowercase)[0]

    def split(self, name: str) -> list[sst.Example]:
        return self.splits[name]

    def describe(self) -> str:
        sizes = ", ".join(f"{len(v):,} {k}" for k, v in self.splits.items())
        return f"{self.name()}: {sizes}, {len(self.labels)} classes"

    def name(self) -> str:
        return task_name(self.cfg)


def checkpoint_split(
    cfg: TextDataConfig,
    split: str,
    labels: Sequence[str],
    data_dir: str | os.PathLike | None = None,
) -> list[sst.Example]:
    """Split ``split`` of a loaded checkpoint's task, read where this machine says, never from
    the checkpoint's own paths (:func:`attnkit.data.location.checkpoint_data`): the SST from
    ``data_dir`` (default ``$ATTNKIT_DATA_DIR/sst``, else the user cache); a ``tsv`` task's
    file of that split by its file name inside ``data_dir`` (refused without one), its labels
    the checkpoint's ``labels``."""
    data = checkpoint_data(cfg, data_dir)
    if data.task == "sst":
        return TextData(data).split(split)
    path = getattr(data, split)
    if path is None:
        name = os.path.basename(getattr(cfg, split) or f"{split}.tsv")
        raise DataError(
            f"no folder to read the {split} file {name} from: give data_dir (--data-dir DIR, "
            "holding it); a checkpoint's own data paths are not followed"
        )
    return sst.read_tsv(path, labels, cfg.lowercase)[0]


def task_name(cfg: TextDataConfig) -> str:
    """``SST-2``, ``SST-5 (phrases)`` or the training file's name."""
    if cfg.task == "sst":
        return f"SST-{cfg.classes}" + (" (phrases)" if cfg.phrases else "")
    return os.path.basename(cfg.train)


def build_vocab(examples: Sequence[sst.Example], min_freq: int, max_size: int | None) -> Vocab:
    """The training words (seen ``min_freq`` times or more, the ``max_size`` most frequent)."""
    return Vocab.build((e.words for e in examples), min_freq, max_size)


def encode(sentences: Sequence[Sequence[str]], vocab: Vocab) -> tuple[Tensor, Tensor]:
    """Word lists -> ``tokens (B, S)`` long (padded with 0) and ``mask (B, S)`` bool."""
    width = max((len(s) for s in sentences), default=0)
    tokens = torch.full((len(sentences), max(width, 1)), PAD_ID, dtype=torch.long)
    for row, words in enumerate(sentences):
        ids = vocab.encode(words)
        tokens[row, : len(ids)] = torch.tensor(ids, dtype=torch.long)
    lengths = torch.tensor([len(s) for s in sentences], dtype=torch.long)
    return tokens, torch.arange(tokens.size(1)) < lengths.unsqueeze(1)  # (B, S) each, S >= 1


def length_batches(
    lengths: Sequence[int], batch_size: int, generator: torch.Generator | None
) -> list[list[int]]:
    """Indices cut into batches of similar lengths: shuffled, sorted within chunks of 50
    batches, cut, and the batches shuffled (``generator`` None: in order, for evaluation)."""
    n = len(lengths)
    if generator is None:
        order = sorted(range(n), key=lambda i: lengths[i])
        return [order[i : i + batch_size] for i in range(0, n, batch_size)]
    order = torch.randperm(n, generator=generator).tolist()
    chunk = 50 * batch_size
    cut = []
    for start in range(0, n, chunk):
        part = sorted(order[start : start + chunk], key=lambda i: lengths[i])
        cut += [part[i : i + batch_size] for i in range(0, len(part), batch_size)]
    shuffled = torch.randperm(len(cut), generator=generator).tolist()
    return [cut[i] for i in shuffled]
