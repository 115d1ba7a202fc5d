"""User-facing errors.

Anything a user can cause (bad data, bad config, a foreign checkpoint, empty
input) raises :class:`AttnkitError` with a message that names the file, line or
key. The CLI prints such errors as one line and exits with status 2; any other
exception is a bug and keeps its traceback.
"""

from __future__ import annotations

import errno
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


class AttnkitError(Exception):
    """An error caused by the user's input, reported without a traceback."""


class DataError(AttnkitError):
    """Malformed or missing data: the message names the file and line."""

    def __init__(self, message: str, path: str | Path | None = None, line: int | None = None):
        where = ""
        if path is not None:
            where = f"{path}"
            if line is not None:
                where += f":{line}"
            where += ": "
        super().__init__(where + message)
        self.path = path
        self.line = line


class InputError(AttnkitError):
    """An input to decode that cannot be: ``name`` says which (``input 3``, ``inputs[2]``)."""

    def __init__(self, message: str, name: str):
        super().__init__(message)
        self.name = name


class RequestError(Exception):
    """A request the server answers with ``status`` (422 a field that breaks the schema or a
    limit, 404 an unknown model, 413 too large, 503 a full queue, 504 too slow); ``field`` names
    the request's field at fault (``inputs[3]``, ``image``), or is None. Not an
    :class:`AttnkitError`, so that an endpoint's ``except AttnkitError`` (a bad input, made a 422)
    never catches a 413, 503 or 504 raised inside it."""

    def __init__(self, status: int, field: str | None, message: str):
        super().__init__(message)
        self.status, self.field, self.message = status, field, message


class ConfigError(AttnkitError):
    """An unknown key or a bad value in a configuration."""


class CheckpointError(AttnkitError):
    """A checkpoint directory that is missing, incomplete, corrupt or foreign."""


class TrainingInterrupted(AttnkitError):
    """Training stopped by SIGINT or SIGTERM after saving ``last``; the CLI exits 128 + signal."""

    def __init__(self, message: str, signum: int):
        super().__init__(message)
        self.signum = signum
        self.exit_status = 128 + signum


class TrainingError(AttnkitError):
    """A run that cannot go on: its loss or gradients stopped being finite, update after update."""


class CaptureError(AttnkitError):
    """Attention that :func:`attnkit.capture` cannot recover exactly, or a request for a layer or
    head the model does not have: one line naming the module and what to do."""


def file_error(path: str | Path | bytes, exc: OSError) -> str:
    """One line for an OSError on ``path``: the path, what went wrong and, for a full or
    read-only place, what to do."""
    hint = ""
    if exc.errno in (errno.ENOSPC, errno.EDQUOT):
        hint = " (free some space, or write elsewhere)"
    elif exc.errno in (errno.EACCES, errno.EPERM, errno.EROFS):
        hint = " (write elsewhere: most commands take --out or -o)"
    return f"{os.fsdecode(path)}: {exc.strerror or exc}{hint}"


@contextmanager
def writing(path: str | Path, what: str = "") -> Iterator[None]:
    """Turn an OSError while writing ``path`` (a full disk, a read-only or missing directory)
    into one :class:`AttnkitError` naming it; ``what`` (e.g. ``"--out "``) is put before it."""
    try:
        yield
    except OSError as exc:
        raise AttnkitError(f"{what}{file_error(exc.filename or path, exc)}") from None
