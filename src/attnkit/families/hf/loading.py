"""Finding and opening a Hugging Face model: ``hf:<local directory>`` or ``hf:<model id>`` (from
the Hugging Face cache), offline unless asked otherwise, with no code from a hub, attention left
on SDPA.

* :func:`require_transformers`: the optional import (``pip install attnkit[hf]``);
* :func:`locate`: what ``hf:NAME`` names (a directory holding ``config.json``, or a model id
  found in the cache), or one line saying what was looked for, where, and how to fetch it;
* :func:`open_model`: the model (the class its ``config.json`` names, in eval mode, float32 by
  default, ``attn_implementation="sdpa"``), its tokenizer or image processor, and its
  :class:`Kind`.

Offline first: ``local_files_only=True`` unless ``download=True`` is passed (and
``HF_HUB_OFFLINE`` is not set, which always wins); ``trust_remote_code`` is never set, so a
model whose classes live on the hub is refused in one line.
"""

from __future__ import annotations

import contextlib
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from attnkit.errors import CheckpointError

#: how ``attnkit.load`` and ``--model`` name a Hugging Face model: ``hf:NAME``
SCHEME = "hf"
PREFIX = f"{SCHEME}:"
INSTALL = "pip install attnkit[hf]"
#: a hub model id: ``name`` or ``owner/name``
_MODEL_ID = re.compile(r"^[A-Za-z0-9][\w.-]*(/[A-Za-z0-9][\w.-]*)?$")
_TRUE = {"1", "on", "yes", "true"}


def require_transformers():
    """The ``transformers`` module, or a one-line error saying how to install it."""
    try:
        import transformers
    except ImportError:
        raise CheckpointError(
            f"Hugging Face models need the transformers package: {INSTALL}"
        ) from None
    major = transformers.__version__.split(".")[0]
    if not major.isdigit() or int(major) < 5:
        raise CheckpointError(
            f"attnkit's Hugging Face models need transformers>=5.0 (this is "
            f"{transformers.__version__}): {INSTALL}"
        )
    return transformers


def offline() -> bool:
    """``HF_HUB_OFFLINE`` (or ``TRANSFORMERS_OFFLINE``) is set to a true value."""
    names = ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE")
    return any(os.environ.get(n, "").strip().lower() in _TRUE for n in names)


def hub_cache() -> Path:
    """Where the Hugging Face cache is (``HF_HUB_CACHE``, ``HF_HOME``/hub, or the default)."""
    from huggingface_hub import constants

    return Path(os.environ.get("HF_HUB_CACHE") or constants.HF_HUB_CACHE)


@dataclass(frozen=True)
class Source:
    """What ``hf:NAME`` names: ``name`` as given, ``where`` what ``from_pretrained`` reads (a
    directory, or a model id), ``local`` True for a directory; ``download``: files may be
    fetched (else ``local_files_only``)."""

    name: str
    where: str
    local: bool
    download: bool = False
    #: the directory holding the model's files (a local directory, or its snapshot in the
    #: cache); None while they may still be fetched
    files: Path | None = None

    @property
    def label(self) -> str:
        return PREFIX + self.name

    def options(self) -> dict[str, Any]:
        """What every ``from_pretrained`` call is given: offline unless downloading, the cache
        :func:`hub_cache` names, and never code from a hub."""
        options: dict[str, Any] = {"local_files_only": not self.download}
        if not self.local:
            options["cache_dir"] = str(hub_cache())
        return {**options, "trust_remote_code": False}

    def has_any(self, names: tuple[str, ...]) -> bool:
        """One of the files ``names`` is with the model (True while files may be fetched)."""
        return self.files is None or any((self.files / n).is_file() for n in names)


def strip_scheme(path: str | Path) -> str:
    """``hf:NAME`` -> ``NAME`` (a name without the prefix as it is)."""
    text = str(path)
    return text[len(PREFIX) :] if text.startswith(PREFIX) else text


def locate(path: str | Path, download: bool = False) -> Source:
    """The model ``path`` (``hf:NAME`` or ``NAME``) names: a directory with a ``config.json``, or
    a model id found in the Hugging Face cache (or, with ``download`` and not offline, on the
    hub). A CheckpointError of one line otherwise."""
    name = strip_scheme(path)
    if not name.strip():
        raise CheckpointError(f"{PREFIX}: give a model id or a local directory after {PREFIX}")
    label = PREFIX + name
    directory = Path(name).expanduser()
    if directory.is_dir():
        if not (directory / "config.json").is_file():
            raise CheckpointError(
                f"{label}: {directory} holds no config.json, so it is not a Hugging Face model "
                "directory (write one with model.save_pretrained(DIR) and the tokenizer's "
                "save_pretrained(DIR))"
            )
        return Source(name, str(directory), True, files=directory)
    if directory.exists():
        raise CheckpointError(f"{label}: {directory} is a file; give the model's directory")
    if not _MODEL_ID.match(name) or ".." in name or name.startswith((".", "~")):
        raise CheckpointError(f"{label}: no such directory ({directory.resolve()})")
    fetching = download and not offline()
    snapshot = None if fetching else _cached(name)
    if not fetching and snapshot is None:
        why = "HF_HUB_OFFLINE is set" if download else "attnkit loads offline"
        raise CheckpointError(
            f"{label}: no directory {name!r} here and no model {name!r} in the Hugging Face cache "
            f"({hub_cache()}); {why}: fetch it once with `hf download {name}` (or load it with "
            "download=True), or give the directory its save_pretrained files are in"
        )
    return Source(name, name, False, fetching, snapshot)


def _cached(model_id: str) -> Path | None:
    """The snapshot directory of the model in the Hugging Face cache (where its ``config.json``
    is), or None."""
    from huggingface_hub import try_to_load_from_cache

    found = try_to_load_from_cache(model_id, "config.json", cache_dir=hub_cache())
    return Path(found).parent if isinstance(found, str) else None


@contextlib.contextmanager
def quiet_progress():
    """transformers' progress bars off while loading (its warnings stay)."""
    from transformers.utils import logging

    was = logging.is_progress_bar_enabled()
    logging.disable_progress_bar()
    try:
        yield
    finally:
        if was:
            logging.enable_progress_bar()
