"""Human word alignments of real sentence pairs (the English-French Hansards test set of the
NAACL 2003 shared task, Och & Ney 2000), read for scoring a model's attention.

Two files, line for line: ``NAME.src-tgt`` holds ``source words ||| target words`` (tokenized,
lower-cased), and ``NAME.gold`` each pair's links, ``i-j`` (sure) or ``ipj`` (possible), with
1-based source position ``i`` and target position ``j``. A pair is returned as its two word
lists and an :class:`~attnkit.data.tasks.alignment.Alignment` of ``(target j, source i)`` links,
0-based (the output-first order of attnkit's gold links; sure links are also possible).
Anything malformed is one :class:`~attnkit.errors.DataError` naming the file and line.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from attnkit.data.tasks.alignment import Alignment
from attnkit.errors import DataError

MAX_FILE_BYTES = 50_000_000  # the Hansards files are ~90 KB; a far larger file is not one
_LINK = re.compile(r"(\d+)([-p])(\d+)")


@dataclass(frozen=True)
class GoldPair:
    """One sentence pair with its human links: ``(target j, source i)``, 0-based."""

    source: list[str]
    target: list[str]
    gold: Alignment


def read_human_gold(pairs_path: str | Path, links_path: str | Path) -> list[GoldPair]:
    """The pairs of ``pairs_path`` (``src ||| tgt``) with the links of ``links_path``."""
    pairs_path, links_path = Path(pairs_path), Path(links_path)
    texts = _lines(pairs_path)
    links = _lines(links_path)
    if len(texts) != len(links):
        raise DataError(
            f"{len(links)} lines of links for {len(texts)} sentence pairs in {pairs_path}",
            links_path,
        )
    return [
        _pair(text, link_line, pairs_path, links_path, number)
        for number, (text, link_line) in enumerate(zip(texts, links), start=1)
    ]


def _lines(path: Path) -> list[str]:
    if not path.is_file():
        raise DataError("no such file", path)
    if path.stat().st_size > MAX_FILE_BYTES:
        raise DataError(f"larger than {MAX_FILE_BYTES:,} bytes: not an alignment file", path)
    try:
        return path.read_text(encoding="utf-8").splitlines()
    except UnicodeDecodeError as exc:
        raise DataError(f"not UTF-8 (byte {exc.start})", path) from None


def _pair(text: str, link_line: str, pairs_path: Path, links_path: Path, number: int) -> GoldPair:
    parts = text.split("|||")
    if len(parts) != 2:
        raise DataError("expected 'source words ||| target words'", pairs_path, number)
    source, target = parts[0].split(), parts[1].split()
    if not source or not target:
        raise DataError("an empty side", pairs_path, number)
    sure, possible = set(), set()
    for item in link_line.split():
        match = _LINK.fullmatch(item)
        if match is None:
            raise DataError(f"{item[:30]!r} is not a link 'i-j' or 'ipj'", links_path, number)
        i, kind, j = int(match[1]), match[2], int(match[3])
        if not (1 <= i <= len(source) and 1 <= j <= len(target)):
            raise DataError(
                f"link {item}: positions are 1..{len(source)} (source) and 1..{len(target)} "
                "(target)",
                links_path,
                number,
            )
        link = (j - 1, i - 1)
        possible.add(link)
        if kind == "-":
            sure.add(link)
    return GoldPair(source, target, Alignment(frozenset(sure), frozenset(possible)))
