"""MNIST from a local directory of IDX files (gzip-compressed or not).

``load(directory, split)`` returns ``(images, labels)``: ``uint8 (N, 28, 28)``
and ``int64 (N,)``. The directory holds the four canonical files,
``train-images-idx3-ubyte`` etc., each either as ``NAME.gz`` or as ``NAME``.
Checksums are md5 of the *uncompressed* content, so a re-compressed copy
verifies as well as the canonical download. With ``download=True`` missing
files are fetched (gzip) from the canonical home, falling back to a mirror.

The IDX format: a big-endian header (magic ``0x00000803`` for images with
three sizes N, rows, cols; ``0x00000801`` for labels with one size N), then
the unsigned bytes.
"""

from __future__ import annotations

import gzip
import struct
from pathlib import Path

import numpy as np

from attnkit.data.download import HOW_TO_DOWNLOAD, download_file, elsewhere, verify_file
from attnkit.errors import DataError

SPLITS = ("train", "test")

#: split -> (images file, labels file), names without ``.gz``
FILES = {
    "train": ("train-images-idx3-ubyte", "train-labels-idx1-ubyte"),
    "test": ("t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte"),
}

#: md5 of the uncompressed content of each file
MD5_CONTENT = {
    "train-images-idx3-ubyte": "6bbc9ace898e44ae57da46a324031adb",
    "train-labels-idx1-ubyte": "a25bea736e30d166cdddb491f175f624",
    "t10k-images-idx3-ubyte": "2646ac647ad5339dbf082846283269ea",
    "t10k-labels-idx1-ubyte": "27ae3e4e09519cfbb04c329615203637",
}

#: where ``NAME.gz`` can be fetched from, tried in order
BASE_URLS = (
    "http://yann.lecun.com/exdb/mnist/",
    "https://ossci-datasets.s3.amazonaws.com/mnist/",
)

SIZES = {"train": 60000, "test": 10000}
SIDE = 28  # every digit is SIDE x SIDE pixels
_IMAGE_MAGIC, _LABEL_MAGIC = 2051, 2049


def find_file(directory: str | Path, name: str) -> Path | None:
    """``directory/NAME.gz`` or ``directory/NAME``, whichever exists (gzip first)."""
    directory = Path(directory)
    for candidate in (directory / f"{name}.gz", directory / name):
        if candidate.is_file():
            return candidate
    return None


def fetch(directory: str | Path, name: str) -> Path:
    """Download ``NAME.gz`` into ``directory`` from the first base URL that works, verified."""
    dest = Path(directory) / f"{name}.gz"
    errors = []
    for base in BASE_URLS:
        try:
            return download_file(
                base + f"{name}.gz", dest, MD5_CONTENT[name], "md5-content", folder="mnist"
            )
        except DataError as exc:
            errors.append(str(exc))
    raise DataError("could not download MNIST: " + "; ".join(errors), path=dest)


def _read_bytes(path: Path) -> bytes:
    try:
        if path.name.endswith(".gz"):
            with gzip.open(path, "rb") as stream:
                return stream.read()
        return path.read_bytes()
    except (OSError, EOFError, gzip.BadGzipFile) as exc:
        raise DataError(f"cannot read IDX file ({exc})", path=path) from None


def parse_idx(data: bytes, path: str | Path, expect_images: bool) -> np.ndarray:
    """Decode IDX bytes: images ``(N, rows, cols)`` or labels ``(N,)``, uint8; DataError if
    malformed."""
    magic_wanted, ndim = (_IMAGE_MAGIC, 3) if expect_images else (_LABEL_MAGIC, 1)
    header = 4 + 4 * ndim
    if len(data) < header:
        raise DataError(
            f"truncated IDX file ({len(data)} bytes, the header alone is {header})", path=path
        )
    (magic,) = struct.unpack(">I", data[:4])
    if magic != magic_wanted:
        kind = "images" if expect_images else "labels"
        raise DataError(
            f"bad IDX magic number {magic:#010x} for {kind} (expected {magic_wanted:#010x})",
            path=path,
        )
    dims = struct.unpack(f">{ndim}I", data[4:header])
    count = int(np.prod(dims))
    if len(data) - header != count:
        raise DataError(
            f"IDX size mismatch: the header promises {'x'.join(map(str, dims))} = {count} bytes, "
            f"the file holds {len(data) - header}",
            path=path,
        )
    return np.frombuffer(data, dtype=np.uint8, offset=header).reshape(dims).copy()


def load(
    directory: str | Path, split: str = "train", verify: bool = True, download: bool = False
) -> tuple[np.ndarray, np.ndarray]:
    """Images ``uint8 (N, 28, 28)`` and labels ``int64 (N,)`` of ``split`` ("train" or "test").

    ``verify`` checks the md5 of each file's content; ``download`` fetches
    missing files. Errors (missing, corrupt, mismatched files) are
    :class:`DataError` naming the file.
    """
    if split not in SPLITS:
        raise DataError(f"unknown MNIST split {split!r}; valid: {', '.join(SPLITS)}")
    directory = Path(directory)
    arrays = []
    for name, is_images in zip(FILES[split], (True, False)):
        path = find_file(directory, name)
        if path is None:
            if not download:
                raise DataError(
                    f"missing MNIST file {name}.gz (or {name}) in {directory}: set "
                    f"{HOW_TO_DOWNLOAD} to fetch it from {BASE_URLS[0]}, or copy it there; or "
                    f"point {elsewhere('mnist')} at a copy you have",
                    path=directory / f"{name}.gz",
                )
            path = fetch(directory, name)
        elif verify:
            verify_file(path, MD5_CONTENT[name], algorithm="md5-content")
        arrays.append(parse_idx(_read_bytes(path), path, expect_images=is_images))
    images, labels = arrays
    if len(images) != len(labels):
        raise DataError(f"{len(images)} images but {len(labels)} labels in {directory} ({split})")
    if labels.size and labels.max() > 9:
        raise DataError(f"label {int(labels.max())} out of range 0-9 in {directory} ({split})")
    return images, labels.astype(np.int64)
