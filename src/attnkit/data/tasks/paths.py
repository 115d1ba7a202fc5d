"""Where the files of a ``data:`` section are.

A relative path in an experiment file is read from the directory of that file, so a run
trains the same wherever it is started from; a path given on the command line
(``--set data.test=...``) is read from the current directory, as command-line paths are.
Training makes them absolute, so the config a checkpoint stores names files that
``attnkit evaluate --split`` finds from any directory.

Experiment files written when relative paths were read from the current directory keep
working: where a path does not exist beside the file but does in the current directory,
that one is read, with a warning saying how to write it now.
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Collection
from pathlib import Path

from attnkit.config import join_key
from attnkit.data.tasks.settings import TaskData


def resolve_data_paths(
    data: TaskData, config_dir: str | Path | None, from_command_line: Collection[str], where: str
) -> None:
    """Make every path key of ``data`` (``PATH_KEYS``) absolute, in place.

    ``config_dir``: the experiment file's directory (None: a mapping built in Python, read from
    the current directory); ``from_command_line``: the data keys ``--set`` gave.
    """
    for key in data.PATH_KEYS:
        value = getattr(data, key)
        if value is None:
            continue
        given_on_command_line = key in from_command_line or "*" in from_command_line
        base = None if given_on_command_line else config_dir
        name = join_key(where, key)
        if isinstance(value, list):
            value = [_absolute(v, base, f"{name}[{i}]") for i, v in enumerate(value)]
        else:
            value = _absolute(value, base, name)
        setattr(data, key, value)


def command_line_data_keys(overrides: Collection[str]) -> set[str]:
    """The ``data`` keys that ``--set`` overrides name (``*``: ``--set data=...`` names all)."""
    keys = set()
    for item in overrides:
        key = item.split("=", 1)[0].strip()
        if key == "data":
            keys.add("*")
        elif key.startswith("data."):
            keys.add(key[len("data.") :])
    return keys


def _absolute(path: str, config_dir: str | Path | None, key: str) -> str:
    given = Path(path).expanduser()
    if given.is_absolute():
        return os.path.normpath(given)
    here = os.path.abspath(given)  # the current directory's
    if config_dir is None:
        return here
    beside = os.path.abspath(Path(config_dir) / given)
    if os.path.exists(beside) or not os.path.exists(here):
        return beside
    warnings.warn(
        f"{key}: {path} is read from the current directory, but relative paths in an "
        f"experiment file are read from the file's directory now: write "
        f"{os.path.relpath(here, os.path.abspath(config_dir))} (or an absolute path)",
        stacklevel=2,
    )
    return here
