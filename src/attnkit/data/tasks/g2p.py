"""Grapheme-to-phoneme conversion on CMUdict 0.7b, the Yao & Zweig (2015) split.

Files (in one directory): ``train.txt``, ``dev.txt``, ``test.txt``; one entry per
line, ``WORD  PH ON ES`` (upper-case word, two spaces, phones separated by one
space, stress removed, 39 phones), latin-1. A word with several pronunciations
has several lines; no word is shared between train and test.

Pairs are ``(word, phones)``, e.g. ``("CAUSE", "K AH Z")``: the source is read
one character per token and the target one phone per whitespace token.
Evaluation is per WORD against all of its pronunciations (see
:func:`references`, :func:`unique_words` and
:func:`attnkit.evaluation.metrics.g2p_scores`): the test split has 12,855
entries but 11,994 words.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from attnkit.data.bounded import read_raw_lines
from attnkit.data.download import ensure_files
from attnkit.data.tasks.base import Pair, Splits
from attnkit.errors import DataError

TRAIN_FILE, DEV_FILE, TEST_FILE = "train.txt", "dev.txt", "test.txt"
SHA256 = {
    TRAIN_FILE: "61faa823e4a4bc64401522eb68db9543d33ee6f10dcacf5be65b1ef5fe08b6f3",
    DEV_FILE: "c8bbfb8d57d8e0c1d2ce6fbc8891325fc4570ac2b9ae068088bc59e804a9c295",
    TEST_FILE: "ece787fd3d88c7b130d43e7c2307ac11e6dfb4c052d661c37808ec7ed1df8574",
}

# --- download source -----------------------------------------------------------
# Public home: the CNTK G2P example. Its plain files (no extension) are already
# in the ``WORD  PH ON ES`` format and byte-identical to the files above (same
# sizes: 2,714,997 / 136,085 / 321,219 bytes), so downloading is fetching under
# another name and checking the sha256; no conversion is needed. Only the
# ``.ctf`` files next to them use CNTK's own text format, and they are not used.
HOME = "https://github.com/microsoft/CNTK/tree/master/Examples/SequenceToSequence/CMUDict/Data"
_RAW = "https://raw.githubusercontent.com/microsoft/CNTK/master/Examples/SequenceToSequence/CMUDict/Data/"
URLS = {
    TRAIN_FILE: _RAW + "cmudict-0.7b.train-dev-20-21",
    DEV_FILE: _RAW + "cmudict-0.7b.train-dev-1-21",
    TEST_FILE: _RAW + "cmudict-0.7b.test",
}
# --------------------------------------------------------------------------------


def _parse_line(text: str) -> Pair:
    """``"WORD  PH ON ES"`` -> ``("WORD", "PH ON ES")``; ValueError saying what is wrong."""
    if any(ord(ch) < 32 and ch != "\t" for ch in text):
        raise ValueError("not text (control characters: a binary file or a wrong encoding?)")
    word, sep, phones = text.partition("  ")
    if not sep:
        raise ValueError("expected 'WORD  PH ON ES' (two spaces between word and phones)")
    word, phones = word.strip(), " ".join(phones.split())
    if not word or any(ch.isspace() for ch in word):
        raise ValueError("empty word or whitespace inside the word")
    if not phones:
        raise ValueError(f"word {word!r} has no phones")
    return word, phones


def load_cmudict_file(path: str | Path) -> list[Pair]:
    """Read one split file: a list of ``(word, phones)`` pairs in file order.

    Blank lines are skipped; any other malformed line raises
    :class:`DataError` naming the file and its 1-based line number.
    """
    path = Path(path)
    pairs: list[Pair] = []
    for number, raw in enumerate(read_raw_lines(path), start=1):  # bounded (data.bounded)
        line = raw.decode("latin-1").rstrip("\r")
        if not line.strip():
            continue
        try:
            pairs.append(_parse_line(line))
        except ValueError as exc:
            raise DataError(
                f"malformed CMUdict line {line[:60]!r}: {exc}", path=path, line=number
            ) from None
    if not pairs:
        raise DataError("no entries in CMUdict file", path=path)
    return pairs


def load(directory: str | Path, verify: bool = True, download: bool = False) -> Splits:
    """Train/dev/test pairs from ``directory`` (which holds train.txt, dev.txt, test.txt).

    ``verify`` checks the sha256 of each file; ``download`` fetches missing
    files from the public home first. Every pronunciation is its own pair.
    """
    directory = Path(directory)
    ensure_files(
        directory, SHA256, None, urls=URLS, download=download, verify=verify, folder="cmudict"
    )
    return Splits(
        train=load_cmudict_file(directory / TRAIN_FILE),
        dev=load_cmudict_file(directory / DEV_FILE),
        test=load_cmudict_file(directory / TEST_FILE),
    )


def references(pairs: Iterable[Pair]) -> dict[str, list[str]]:
    """word -> its distinct pronunciations in file order (keys in first-seen order)."""
    refs: dict[str, list[str]] = {}
    for word, phones in pairs:
        prons = refs.setdefault(word, [])
        if phones not in prons:
            prons.append(phones)
    return refs


def unique_words(pairs: Iterable[Pair]) -> list[str]:
    """The distinct words of ``pairs`` in first-seen order (what a model is asked to pronounce)."""
    return list(dict.fromkeys(word for word, _ in pairs))
