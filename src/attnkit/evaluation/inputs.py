"""What ``attnkit evaluate`` scores: a split of the checkpoint's task, read by name, or files the
user names (``--src FILE --ref FILE``, or ``--tsv FILE``).

Scoring files reads nothing of the training data: a checkpoint holds all that decoding needs.
A split is read where this machine says, never where the checkpoint's config says
(:func:`attnkit.data.location.checkpoint_data`): a downloaded data set (CMUdict, Multi30k) from
``--data-dir`` (``data_dir=``), else ``$ATTNKIT_DATA_DIR/<name>``, else the user cache; a
parallel task's file of that split by its training file name inside ``--data-dir`` (refused
without one); a generated task (numbers, dates, ...) is generated again from its settings.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from attnkit.data.location import checkpoint_data
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


def split_pairs(
    data: TaskData, split: str, data_dir: str | os.PathLike | None = None
) -> list[Pair]:
    """The pairs of ``split`` (dev or test) of a loaded checkpoint's task, read from ``data_dir``
    or the data directory, never from the checkpoint's own paths (module docstring); a missing
    file is one line naming it and saying how to score other files instead."""
    local = checkpoint_data(data, data_dir)
    if split in getattr(local, "PATH_KEYS", ()) and getattr(local, split) is None:
        trained = getattr(data, split)
        names = [trained] if isinstance(trained, str) else list(trained or [f"{split}.tsv"])
        shown = " and ".join(os.path.basename(str(n)) for n in names)
        raise DataError(
            f"no folder to read the {split} split's {shown} from: give --data-dir DIR (in "
            "Python data_dir=DIR), the folder holding it; a checkpoint's own data paths are not "
            f"followed ({OTHER_FILES})"
        )
    try:
        return build_split(local, split)
    except DataError as exc:
        raise DataError(
            f"{exc} (the {split} split this checkpoint was trained with; {OTHER_FILES})"
        ) from None
