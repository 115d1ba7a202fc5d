"""Where the downloaded data sets (CMUdict, Multi30k, MNIST) live on this machine.

A data set's directory is, first to last:

1. ``data.directory`` of the experiment, when set (a relative path is read from the current
   directory, as every path of a config is);
2. ``$ATTNKIT_DATA_DIR/<name>`` (``name``: ``cmudict``, ``multi30k``, ``mnist``);
3. ``<user cache>/data/<name>``, the platform's per-user cache directory (platformdirs:
   ``~/.cache/attnkit`` on Linux, ``~/Library/Caches/attnkit`` on macOS,
   ``%LOCALAPPDATA%\\attnkit\\Cache`` on Windows).

A checkpoint keeps ``data.directory`` as its config had it, so one trained with ``null`` reads its
data wherever the machine that evaluates it keeps them.
"""

from __future__ import annotations

import os
from pathlib import Path

ENV = "ATTNKIT_DATA_DIR"
"""The environment variable naming the directory that holds every data set, one folder each."""


def data_root() -> Path:
    """``$ATTNKIT_DATA_DIR``, else ``<user cache>/data``."""
    explicit = os.environ.get(ENV, "").strip()
    if explicit:
        return Path(explicit).expanduser()
    from platformdirs import user_cache_dir  # only here: most commands never look for data

    return Path(user_cache_dir("attnkit", appauthor=False)) / "data"


def dataset_dir(name: str, directory: str | os.PathLike | None = None) -> Path:
    """The directory of data set ``name``: ``directory`` when given, else ``data_root() / name``."""
    if directory:
        return Path(directory).expanduser()
    return data_root() / name
