"""Where the downloaded data sets (CMUdict, Multi30k, MNIST) live on this machine.

A data set's directory is, first to last:

1. ``data.directory`` of the experiment, when set (a relative path is read from the current
   directory, as every path of a config is);
2. ``$ATTNKIT_DATA_DIR/<name>`` (``name``: ``cmudict``, ``multi30k``, ``mnist``);
3. ``<user cache>/data/<name>``, the platform's per-user cache directory (platformdirs:
   ``~/.cache/attnkit`` on Linux, ``~/Library/Caches/attnkit`` on macOS,
   ``%LOCALAPPDATA%\\attnkit\\Cache`` on Windows).

A checkpoint keeps ``data.directory`` as its config had it, but a *loaded* checkpoint never
follows it (:func:`checkpoint_data`): it reads from the folder its caller names (``data_dir=``,
``--data-dir``), else ``$ATTNKIT_DATA_DIR/<name>``, else the user cache, and downloads nothing.
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


def checkpoint_data(section, data_dir: str | os.PathLike | None = None):
    """A copy of a loaded checkpoint's ``data:`` section whose paths are this machine's, never
    the checkpoint's: a checkpoint does not choose where attnkit reads, writes or downloads.

    - ``directory`` (the data set's folder, or the spoken-audio cache): ``data_dir`` when given,
      else null, which every reader takes as ``$ATTNKIT_DATA_DIR/<name>`` (else the user cache);
    - each file key of ``PATH_KEYS`` (``train``, ``dev``, ``test``: a file, or a list of them):
      its file name inside ``data_dir``; null without ``data_dir`` (its reader then asks for
      one);
    - ``download``: off (a loaded model reads what is there and fetches nothing).

    The section is any data config dataclass; keys it does not have are left alone.
    """
    import copy

    data = copy.copy(section)
    folder = None if data_dir is None else Path(data_dir).expanduser()
    if hasattr(data, "directory"):
        data.directory = None if folder is None else str(folder)
    for key in getattr(data, "PATH_KEYS", ()):
        value = getattr(data, key)
        if key == "directory" or value is None:
            continue
        if folder is None:
            setattr(data, key, None)
        elif isinstance(value, list):
            setattr(data, key, [str(folder / Path(v).name) for v in value])
        else:
            setattr(data, key, str(folder / Path(value).name))
    if hasattr(data, "download"):
        data.download = False
    return data
