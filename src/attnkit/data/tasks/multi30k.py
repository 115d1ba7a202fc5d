"""Multi30k task 1 (WMT16/17 multimodal translation): English <-> German and English <-> French.

Files (in one directory): ``{train,val,test_2016_flickr}.{de,en,fr}.gz``, gzip
compressed utf-8, one raw (untokenized, cased) sentence per line: 29,000 / 1,014 /
1,000 sentences. The German and the French files (the WMT17 extension) are each
line-aligned with the English ones, so the pairs are en<->de and en<->fr; German and
French are not aligned with each other. A pair reads (and checks) only its own two
languages' files. Pairs are ``(source sentence, target sentence)``; surrounding
whitespace is stripped.
Score with sacrebleu BLEU and chrF on detokenized output against the raw
references (:func:`attnkit.evaluation.metrics.bleu`).
"""

from __future__ import annotations

import gzip
import zlib
from pathlib import Path

from attnkit.data.bounded import iter_raw_lines
from attnkit.data.download import ensure_files
from attnkit.data.tasks.base import Pair, Splits
from attnkit.errors import ConfigError, DataError

LANGUAGES = ("de", "en", "fr")
PAIRS = (("en", "de"), ("en", "fr"))
"""The line-aligned language pairs; each may be read either way round."""
SPLIT_FILES = {"train": "train", "dev": "val", "test": "test_2016_flickr"}  # split -> file stem
SHA256 = {
    "train.de.gz": "726e39b2fa9eb9ffb6dc763fb35a179f80fae06ffc5d28b6ace5faa883de28a6",
    "train.en.gz": "d79cfa999dd4c51d2cb42499b6796d5a882c3a8a961923c25a898c90f8bbd56f",
    "val.de.gz": "f0cba2f995189cf5770f29a8a9a537a3ad3f51657ad873405082ff6863a5e75a",
    "val.en.gz": "14f7d25ddd868909a9213e361768460edcacdd6ab9d1e77b92560dc10c10dc28",
    "test_2016_flickr.de.gz": "9204244e408ccb38d2a55cfcd344df15005fc42a07a6e55ca6c52b6ababb8cc8",
    "test_2016_flickr.en.gz": "611d361c6334bc7246101d48097c13cf5c4413c5befc793cc629934359d532d9",
    "train.fr.gz": "622e75069e9f4c577425c4f277116ce66e63a2401c0a2312d90073cb12379a3c",
    "val.fr.gz": "ca3106f1a72390591d25f6c45cb4cd39dec4cd3f123e099748a3ce5256c160e9",
    "test_2016_flickr.fr.gz": "6d326e188d259fb1d04ac19eae3af956559b3a0b93d7635e56c90987c40c8b90",
}
HOME = "https://github.com/multi30k/dataset/tree/master/data/task1/raw"
BASE_URL = "https://raw.githubusercontent.com/multi30k/dataset/master/data/task1/raw/"


def read_lines(path: str | Path) -> list[str]:
    """The stripped lines of a gzip utf-8 file; DataError with file:line for an empty or undecodable
    line."""
    path = Path(path)
    try:  # decompressed with bounds: a gzip bomb stops at the size limit (data.bounded)
        with gzip.open(path, "rb") as stream:
            lines = list(iter_raw_lines(stream, path))
    except (OSError, EOFError, zlib.error) as exc:
        raise DataError(f"cannot read gzip file ({exc})", path=path) from None
    out = []
    for number, line in enumerate(lines, start=1):
        try:
            text = line.decode("utf-8").strip()
        except UnicodeDecodeError as exc:
            raise DataError(
                f"invalid utf-8 ({exc.reason} at byte {exc.start})", path=path, line=number
            ) from None
        if not text:
            raise DataError(
                "empty line (every line must hold one sentence)", path=path, line=number
            )
        out.append(text)
    return out


def read_parallel(src_path: str | Path, tgt_path: str | Path) -> list[Pair]:
    """Line-aligned ``(source, target)`` pairs; DataError naming both files when the line counts
    differ."""
    src, tgt = read_lines(src_path), read_lines(tgt_path)
    if len(src) != len(tgt):
        raise DataError(
            f"line count mismatch: {src_path} has {len(src)} lines but {tgt_path} has {len(tgt)}",
            path=src_path,
        )
    return list(zip(src, tgt))


def pair_names() -> str:
    """The allowed pairs as a user writes them: ``en<->de, en<->fr``."""
    return ", ".join(f"{a}<->{b}" for a, b in PAIRS)


def language_problem(src_lang: str, tgt_lang: str) -> str | None:
    """Why ``src_lang -> tgt_lang`` is not a Multi30k pair (one line), or None when it is."""
    for key, lang in (("src_lang", src_lang), ("tgt_lang", tgt_lang)):
        if lang not in LANGUAGES:
            return (
                f"{key} {lang!r} is not one of {', '.join(LANGUAGES)} "
                f"(the pairs are {pair_names()}, either way round)"
            )
    if src_lang == tgt_lang:
        return f"src_lang and tgt_lang must differ, both are {src_lang!r}"
    if (src_lang, tgt_lang) not in PAIRS and (tgt_lang, src_lang) not in PAIRS:
        return (
            f"{src_lang}->{tgt_lang} is not a line-aligned pair of Multi30k "
            f"(the pairs are {pair_names()}, either way round)"
        )
    return None


def files_for(src_lang: str, tgt_lang: str) -> dict[str, str]:
    """The file names (-> sha256) that the pair reads, and no others."""
    return {
        f"{stem}.{lang}.gz": SHA256[f"{stem}.{lang}.gz"]
        for stem in SPLIT_FILES.values()
        for lang in (src_lang, tgt_lang)
    }


def load(
    directory: str | Path,
    src_lang: str = "de",
    tgt_lang: str = "en",
    verify: bool = True,
    download: bool = False,
) -> Splits:
    """Train/val/test_2016_flickr pairs from ``directory`` as train/dev/test.

    Only the pair's six files are needed: ``verify`` checks the sha256 of each,
    ``download`` fetches missing ones from the public home first. Raises
    ConfigError for a language outside de/en/fr, equal languages or de<->fr
    (not line-aligned), naming the allowed pairs.
    """
    problem = language_problem(src_lang, tgt_lang)
    if problem:
        raise ConfigError(f"multi30k: {problem}")
    directory = Path(directory)
    files = files_for(src_lang, tgt_lang)
    ensure_files(directory, files, BASE_URL, download=download, verify=verify, folder="multi30k")
    splits = {
        split: read_parallel(
            directory / f"{stem}.{src_lang}.gz", directory / f"{stem}.{tgt_lang}.gz"
        )
        for split, stem in SPLIT_FILES.items()
    }
    return Splits(**splits)
