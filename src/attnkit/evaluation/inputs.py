"""What ``attnkit evaluate`` scores: a split of the checkpoint's task, read by name, or files the
user names (``--src FILE --ref FILE``, or ``--tsv FILE``).

Scoring files reads nothing of the training data: a checkpoint holds all that decoding needs.
A split is read where the checkpoint's config says it is (absolute paths since training stores
them so; a relative path in a checkpoint written before that is read from the current
directory, as it was then).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from attnkit.data.tasks.base import Pair
from attnkit.data.tasks.parallel import load_parallel, load_tsv
from attnkit.data.tasks.registry import build_split
from attnkit.data.tasks.settings import TaskData
from attnkit.errors import AttnkitError, DataError

OTHER_FILES = "to score other files, pass --src FILE --ref FILE (or --tsv FILE)"


@dataclass
class EvalFiles:
    """The user's test set: line-aligned ``src`` and ``ref`` files, or one ``tsv`` file."""

    src: Path | None = None
    ref: Path | None = None
    tsv: Path | None = None

    def __post_init__(self) -> None:
        if self.tsv is not None and (self.src is not None or self.ref is not None):
            raise AttnkitError("give --tsv FILE, or --src FILE --ref FILE, not both")
        if self.tsv is None and (self.src is None) != (self.ref is None):
            missing = "--ref" if self.ref is None else "--src"
            raise AttnkitError(f"{missing} FILE is missing: --src and --ref go together")

    @property
    def given(self) -> bool:
        return any(p is not None for p in (self.src, self.ref, self.tsv))

    @property
    def name(self) -> str:
        """What the default output directory is named after: the (source) file's name."""
        return Path(self.tsv if self.tsv is not None else self.src).name

    def describe(self) -> dict:
        """The files, as absolute paths (for scores.json)."""
        if self.tsv is not None:
            return {"tsv": os.path.abspath(self.tsv)}
        return {"src": os.path.abspath(self.src), "ref": os.path.abspath(self.ref)}

    def read(self) -> list[Pair]:
        """The pairs; a missing, unreadable or non-UTF-8 file, an empty line or files of
        different lengths is a DataError naming the file (and line)."""
        if self.tsv is not None:
            return load_tsv(self.tsv)
        return load_parallel(self.src, self.ref)


def split_pairs(data: TaskData, split: str) -> list[Pair]:
    """The pairs of ``split`` (dev or test) of the checkpoint's task; a missing file is one line
    naming it and saying how to score other files instead."""
    try:
        return build_split(data, split)
    except DataError as exc:
        raise DataError(
            f"{exc} (the {split} split this checkpoint was trained with; {OTHER_FILES})"
        ) from None
