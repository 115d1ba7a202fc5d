"""Checksums, verification and downloads for the data sets attnkit reads.

Loaders take a local directory and call :func:`ensure_files` with the file
names and checksums they expect. Files that are present are verified; files
that are missing are fetched from their public home only when the caller asks
for it (``download=True``; in an experiment file ``data.download: true``, the
default). Nothing here is called at import time and nothing touches the
network unless asked.
"""

from __future__ import annotations

import gzip
import hashlib
import os
import urllib.error
import urllib.request
from collections.abc import Mapping
from pathlib import Path

from attnkit.errors import DataError

ALGORITHMS = ("sha256", "md5-content")
HOW_TO_DOWNLOAD = "data.download: true (attnkit train CONFIG --set data.download=true)"
"""What a user sets to have missing files fetched: named by every "missing file" error."""


def elsewhere(folder: str) -> str:
    """Where a user says the data already are, named by every "missing file" and "download
    failed" error: ``data.directory``, or ``$ATTNKIT_DATA_DIR`` holding ``folder/`` (the data set's
    own folder, e.g. ``planetoid``)."""
    return f"data.directory, or $ATTNKIT_DATA_DIR holding {folder}/,"


_CHUNK = 1 << 20


def _hash_stream(stream, hasher) -> str:
    for chunk in iter(lambda: stream.read(_CHUNK), b""):
        hasher.update(chunk)
    return hasher.hexdigest()


def sha256_file(path: str | Path) -> str:
    """Hex sha256 of the file's bytes as stored on disk."""
    try:
        with open(path, "rb") as stream:
            return _hash_stream(stream, hashlib.sha256())
    except OSError as exc:
        raise DataError(f"cannot read file ({exc.strerror or exc})", path=path) from None


def md5_of_content(path: str | Path) -> str:
    """Hex md5 of the file's content: gunzipped first when the name ends with ``.gz``.

    Used where the compressed bytes may differ between copies but the
    uncompressed content is canonical (the MNIST IDX files).
    """
    path = Path(path)
    try:
        opener = gzip.open if path.name.endswith(".gz") else open
        with opener(path, "rb") as stream:
            return _hash_stream(stream, hashlib.md5())
    except (OSError, EOFError, gzip.BadGzipFile) as exc:
        raise DataError(f"cannot read file ({exc})", path=path) from None


def checksum(path: str | Path, algorithm: str = "sha256") -> str:
    """The checksum of ``path`` under ``algorithm`` (``"sha256"`` or ``"md5-content"``)."""
    if algorithm == "sha256":
        return sha256_file(path)
    if algorithm == "md5-content":
        return md5_of_content(path)
    raise ValueError(f"unknown checksum algorithm {algorithm!r} (expected one of {ALGORITHMS})")


def verify_file(path: str | Path, expected: str, algorithm: str = "sha256") -> None:
    """Raise :class:`DataError` naming ``path`` unless its checksum equals ``expected``."""
    actual = checksum(path, algorithm)
    if actual.lower() != expected.strip().lower():
        raise DataError(
            f"{algorithm} checksum mismatch: expected {expected}, got {actual} "
            "(the file is corrupt, truncated or a different version; delete it and fetch it again)",
            path=path,
        )


def download_file(
    url: str,
    dest: str | Path,
    expected: str | None = None,
    algorithm: str = "sha256",
    folder: str | None = None,
) -> Path:
    """Fetch ``url`` to ``dest`` (via ``dest.part`` then rename) and verify it when ``expected`` is
    given.

    Returns ``dest``. A network failure or a checksum mismatch raises
    :class:`DataError` naming the URL; no partial file is left behind. A network failure also
    says how to work offline: point :func:`elsewhere` at a copy (``folder``: the data set's
    folder under ``$ATTNKIT_DATA_DIR``; default ``dest``'s directory's name).
    """
    dest = Path(dest)
    dest.parent.mkdir(parents=True, exist_ok=True)
    part = dest.with_name(dest.name + ".part")
    try:
        with urllib.request.urlopen(url, timeout=60) as response, open(part, "wb") as out:
            for chunk in iter(lambda: response.read(_CHUNK), b""):
                out.write(chunk)
    except (urllib.error.URLError, OSError, ValueError) as exc:
        part.unlink(missing_ok=True)
        reason = getattr(exc, "reason", None) or exc
        offline = f"without a network, point {elsewhere(folder or dest.parent.name)} at a copy"
        raise DataError(f"download failed from {url} ({reason}); {offline}", path=dest) from None
    try:
        if expected is not None:
            verify_file(part, expected, algorithm)
    except DataError as exc:
        part.unlink(missing_ok=True)
        raise DataError(f"downloaded from {url} but {exc}", path=dest) from None
    os.replace(part, dest)
    return dest


def ensure_files(
    directory: str | Path,
    files: Mapping[str, str],
    base_url: str | None,
    algorithm: str = "sha256",
    download: bool = False,
    urls: Mapping[str, str] | None = None,
    verify: bool = True,
    folder: str | None = None,
) -> Path:
    """Make sure every file of ``files`` (name -> checksum) is in ``directory`` and verifies.

    A missing file is downloaded from ``urls[name]`` if given, else from
    ``base_url + name``, when ``download`` is true; otherwise the error names
    the missing file and says how to get it (``folder``: the data set's folder under
    ``$ATTNKIT_DATA_DIR``, default ``directory``'s name). ``verify=False`` only checks that
    the files exist (faster on repeated runs). Returns ``directory`` as a Path.
    """
    directory = Path(directory)
    folder = folder or directory.name
    urls = dict(urls or {})
    for name, expected in files.items():
        path = directory / name
        url = urls.get(name) or (base_url + name if base_url else None)
        if not path.is_file():
            if not download or url is None:
                how = (
                    f"set {HOW_TO_DOWNLOAD} to fetch it from {url}, or copy it there by hand"
                    if url
                    else "copy it there by hand"
                )
                how += f"; or point {elsewhere(folder)} at a copy you have"
                raise DataError(f"missing data file {name!r} in {directory}: {how}", path=path)
            download_file(url, path, expected if verify else None, algorithm, folder)
        elif verify:
            verify_file(path, expected, algorithm)
    return directory
