"""The user's own parallel text: a TSV file, or two line-aligned files.

* ``load_tsv(path)``: one pair per line, ``source<TAB>target``.
* ``load_parallel(src_path, tgt_path)``: line ``i`` of one file translates
  line ``i`` of the other.

Files are UTF-8; a final newline is fine and ``\\r\\n`` line ends are
accepted. Anything else that is wrong raises :class:`attnkit.errors.DataError`
naming the file and the 1-based line: a missing file, bytes that are not
UTF-8, a TSV line without exactly one tab, an empty line or side, files with
different line counts.
"""

from __future__ import annotations

import warnings
from pathlib import Path

from attnkit.data.bounded import raw_lines
from attnkit.data.tasks.base import Pair, Splits
from attnkit.errors import DataError

PathLike = str | Path
Source = PathLike | tuple[PathLike, PathLike]


def read_lines(path: PathLike) -> list[str]:
    """The lines of a UTF-8 text file, without line ends; every line must be non-empty."""
    path = Path(path)
    lines = []
    # read as it is checked: a size or a line above its limit, or bytes that are not UTF-8, stop
    # the reading there; a FIFO or a device is refused before it is read (attnkit.data.bounded)
    for number, raw in enumerate(raw_lines(path, regular=True), start=1):
        if number == 1 and raw.startswith(b"\xef\xbb\xbf"):  # UTF-8 byte order mark
            raw = raw[3:]
        if raw.endswith(b"\r"):
            raw = raw[:-1]
        try:
            line = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise DataError(
                f"not valid UTF-8 (byte 0x{raw[exc.start]:02x} at column {exc.start + 1})",
                path=path,
                line=number,
            ) from None
        if not line.strip():
            raise DataError("empty line", path=path, line=number)
        lines.append(line)
    if not lines:
        raise DataError("file is empty", path=path)
    return lines


def load_tsv(path: PathLike) -> list[Pair]:
    """Pairs from a file with one ``source<TAB>target`` per line."""
    pairs = []
    for number, line in enumerate(read_lines(path), start=1):
        tabs = line.count("\t")
        if tabs != 1:
            raise DataError(
                f"expected exactly one tab between source and target, found {tabs}",
                path=path,
                line=number,
            )
        src, tgt = line.split("\t")
        if not src.strip():
            raise DataError("empty source (nothing before the tab)", path=path, line=number)
        if not tgt.strip():
            raise DataError("empty target (nothing after the tab)", path=path, line=number)
        pairs.append((src, tgt))
    return pairs


def load_parallel(src_path: PathLike, tgt_path: PathLike) -> list[Pair]:
    """Pairs from two line-aligned files: line i of ``src_path`` with line i of ``tgt_path``."""
    sources = read_lines(src_path)
    targets = read_lines(tgt_path)
    if len(sources) != len(targets):
        raise DataError(
            f"{src_path} has {len(sources)} lines but {tgt_path} has {len(targets)}; "
            "parallel files must have one line per pair"
        )
    return list(zip(sources, targets))


def load_pairs(source: Source) -> list[Pair]:
    """A ``.tsv`` path, or a ``(src_path, tgt_path)`` tuple."""
    if isinstance(source, (tuple, list)):
        if len(source) != 2:
            raise DataError(
                f"expected a TSV path or a (source file, target file) pair, got {source!r}"
            )
        return load_parallel(source[0], source[1])
    return load_tsv(source)


def load_splits(train: Source, dev: Source, test: Source) -> Splits:
    """Load the three splits; each is a ``.tsv`` path or a ``(src_path, tgt_path)`` tuple.

    Warns (does not fail) when dev or test sources also appear in train, since
    held-out scores would then overstate how well the model generalises.
    """
    splits = Splits(train=load_pairs(train), dev=load_pairs(dev), test=load_pairs(test))
    train_sources = {src for src, _ in splits.train}
    for name, pairs in (("dev", splits.dev), ("test", splits.test)):
        overlap = sum(src in train_sources for src, _ in pairs)
        if overlap:
            warnings.warn(
                f"{overlap} of {len(pairs)} {name} sources also appear in train", stacklevel=2
            )
    return splits
