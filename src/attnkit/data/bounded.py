"""Reading a user's files and streams with bounds: a size and a line length, checked as the bytes
arrive, before anything is decoded or tokenized.

Every text reader of attnkit (training and evaluation files, ``translate``'s input and standard
input, CMUdict, Multi30k's gzip files) reads through :func:`read_raw_lines`, so ``/dev/zero``,
``/dev/urandom``, a FIFO or one line of a gigabyte costs at most the limit in memory and time: a
regular file above :attr:`ReadLimits.max_bytes` is refused before a byte is read; a stream or
device is read up to the limit and refused there; a line above :attr:`ReadLimits.max_line` bytes
is refused as soon as it passes the limit. Each refusal is one line naming the file, the line and
the limit, and how to raise it.

The defaults are far above real data (a gigabyte per file, a megabyte per line); the environment
variables ``ATTNKIT_MAX_INPUT_MB`` and ``ATTNKIT_MAX_LINE_KB`` change them.

The data files of every family (node tables and edge lists, Planetoid files, text TSV and SST
trees, bAbI stories, pointer point lists) are read with :func:`text_lines` or
:func:`read_regular_bytes`: regular files only (a FIFO, a device or a directory is refused in
one line before a byte is read, never waited on), with the same caps checked as the bytes
arrive. :func:`ascii_int` reads a number of such a file: ASCII digits only, and few of them.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from attnkit.errors import ConfigError, DataError

MB, KB = 1 << 20, 1 << 10
DEFAULT_MAX_INPUT_MB = 1024
DEFAULT_MAX_LINE_KB = 1024


@dataclass(frozen=True)
class ReadLimits:
    """``max_bytes`` per file or stream, ``max_line`` bytes per line (its newline aside)."""

    max_bytes: int = DEFAULT_MAX_INPUT_MB * MB
    max_line: int = DEFAULT_MAX_LINE_KB * KB


def _env_number(name: str, default: int) -> int:
    raw = os.environ.get(name)
    if raw is None or not raw.strip():
        return default
    try:
        value = int(raw)
    except ValueError:
        value = 0
    if value <= 0:
        raise ConfigError(f"{name}={raw[:40]!r}: expected a whole number above 0")
    return value


def read_limits() -> ReadLimits:
    """The limits in force: the defaults, or ``ATTNKIT_MAX_INPUT_MB`` / ``ATTNKIT_MAX_LINE_KB``."""
    return ReadLimits(
        _env_number("ATTNKIT_MAX_INPUT_MB", DEFAULT_MAX_INPUT_MB) * MB,
        _env_number("ATTNKIT_MAX_LINE_KB", DEFAULT_MAX_LINE_KB) * KB,
    )


def _too_long(name, number: int, limits: ReadLimits) -> DataError:
    return DataError(
        f"line longer than {limits.max_line:,} bytes, the limit (ATTNKIT_MAX_LINE_KB raises it)",
        path=name,
        line=number,
    )


def _too_large(name, size: str, limits: ReadLimits) -> DataError:
    return DataError(
        f"{size} bytes, above the limit of {limits.max_bytes:,} per input "
        "(ATTNKIT_MAX_INPUT_MB raises it)",
        path=name,
    )


def iter_raw_lines(
    stream: BinaryIO, name: str | Path, limits: ReadLimits | None = None
) -> Iterator[bytes]:
    """The lines of a binary ``stream`` without their ``\\n`` (a final newline ends the last line,
    it does not start one), each checked against ``limits`` before it is yielded."""
    limits = limits or read_limits()
    total, number = 0, 0
    while True:
        line = stream.readline(limits.max_line + 2)  # the line, its \r\n, and one byte more
        if not line:
            return
        number += 1
        total += len(line)
        if total > limits.max_bytes:
            raise _too_large(name, "more than", limits)
        body = line[:-1] if line.endswith(b"\n") else line
        if len(body.removesuffix(b"\r")) > limits.max_line:
            raise _too_long(name, number, limits)
        yield body


def _open(path: Path, regular: bool) -> BinaryIO:
    """``path`` opened for reading; ``regular``: without waiting on a FIFO (``O_NONBLOCK``), and
    anything but a regular file refused (checked on the open file, so nothing swaps it in)."""
    if not regular:
        return open(path, "rb")
    descriptor = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    info = os.fstat(descriptor)
    if not stat.S_ISREG(info.st_mode):
        os.close(descriptor)
        kind = "a directory" if stat.S_ISDIR(info.st_mode) else "a FIFO, device or socket"
        raise DataError(f"is {kind}, not a regular file", path=path)
    return os.fdopen(descriptor, "rb")


def raw_lines(
    path: str | Path, limits: ReadLimits | None = None, regular: bool = False
) -> Iterator[bytes]:
    """The lines of the file at ``path`` as they are read (see :func:`iter_raw_lines`): a caller
    that refuses a line stops reading there. A regular file above the size limit is refused from
    its size alone; ``regular``: anything else is refused before it is read. DataError naming the
    file otherwise."""
    path = Path(path)
    limits = limits or read_limits()
    try:
        with _open(path, regular) as stream:
            info = os.fstat(stream.fileno())
            if stat.S_ISDIR(info.st_mode):
                raise DataError("is a directory, not a text file", path=path)
            if stat.S_ISREG(info.st_mode) and info.st_size > limits.max_bytes:
                raise _too_large(path, f"{info.st_size:,}", limits)
            yield from iter_raw_lines(stream, path, limits)
    except FileNotFoundError:
        raise DataError("file not found", path=path) from None
    except IsADirectoryError:
        raise DataError("is a directory, not a text file", path=path) from None
    except OSError as exc:
        raise DataError(f"cannot read file ({exc.strerror or exc})", path=path) from None


def read_raw_lines(path: str | Path, limits: ReadLimits | None = None) -> list[bytes]:
    """Every line of the file at ``path`` (:func:`raw_lines`)."""
    return list(raw_lines(path, limits))


def text_lines(
    path: str | Path, limits: ReadLimits | None = None, skip_blank: bool = True
) -> Iterator[tuple[int, str]]:
    """(line number, UTF-8 text without its line end) of each line of the regular file at
    ``path``, read with :func:`raw_lines`'s caps; ``skip_blank``: blank lines are not yielded
    (their numbers still count). DataError naming ``file:line`` for a line that is not UTF-8."""
    for number, raw in enumerate(raw_lines(path, limits, regular=True), 1):
        try:
            text = raw.decode("utf-8").removesuffix("\r")
        except UnicodeDecodeError as exc:
            raise DataError(f"not UTF-8 text (byte {exc.start + 1})", path, number) from None
        if text.strip() or not skip_blank:
            yield number, text


def read_regular_bytes(path: str | Path, max_bytes: int) -> bytes:
    """The bytes of the regular file at ``path``, at most ``max_bytes`` of them (checked on its
    size and again as it is read); DataError naming the file otherwise."""
    path = Path(path)
    try:
        with _open(path, regular=True) as stream:
            if os.fstat(stream.fileno()).st_size > max_bytes:
                raise DataError(f"larger than the limit of {max_bytes:,} bytes", path=path)
            data = stream.read(max_bytes + 1)
    except FileNotFoundError:
        raise DataError("file not found", path=path) from None
    except OSError as exc:
        raise DataError(f"cannot read file ({exc.strerror or exc})", path=path) from None
    if len(data) > max_bytes:
        raise DataError(f"larger than the limit of {max_bytes:,} bytes", path=path)
    return data


def ascii_int(text: str, max_digits: int = 18) -> int | None:
    """``text`` as a non-negative int when it is 1 to ``max_digits`` ASCII digits, else None
    (``str.isdigit`` accepts ``'²'``, which ``int`` refuses, and any number of digits)."""
    if not 0 < len(text) <= max_digits or not text.isascii() or not text.isdigit():
        return None
    return int(text)
