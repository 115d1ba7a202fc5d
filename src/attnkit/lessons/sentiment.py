"""A generated sentiment task in which one word decides: the text lesson's quick-mode data.

Each sentence is a run of plain words (``FILLER``) with at most one opinion word in it, at a
random place: a ``POSITIVE`` word makes it positive, a ``NEGATIVE`` one negative, none makes it
neutral. Nothing else carries the label, so a classifier that attends should put its weight on
that one word, and the word's position (``Sentence.cue``) is the gold answer to "where should it
look?". (With two classes alone a model may look for the words of one class only and read their
absence as the other; the neutral class makes it find both.) Lengths are drawn uniformly from
``min_len..max_len``: in a long sentence the one word is a small part of a mean over the words.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from pathlib import Path

POSITIVE = ("superb", "moving", "gripping", "charming", "brilliant", "witty", "lovely", "tender")
NEGATIVE = ("tedious", "clumsy", "dreary", "bland", "awful", "shallow", "sloppy", "dull")
FILLER = (
    "the film a story its cast and of with this in plot director scenes about an old town "
    "family music two hours city night house camera script actors moment end who on it "
    "as by at from that year friend lead role score light"
).split()
LABELS = ("negative", "neutral", "positive")


@dataclass(frozen=True)
class Sentence:
    """One example: its ``words``, its ``label`` (one of :data:`LABELS`) and ``cue``, the
    position of the one word that decides it (None in a neutral sentence)."""

    words: tuple[str, ...]
    label: str
    cue: int | None

    @property
    def text(self) -> str:
        return " ".join(self.words)


def sentences(n: int, min_len: int = 6, max_len: int = 30, seed: int = 0) -> list[Sentence]:
    """``n`` sentences, the three labels equally likely, lengths uniform in
    ``min_len..max_len`` (words, the opinion word included)."""
    if not 2 <= min_len <= max_len:
        raise ValueError(f"need 2 <= min_len <= max_len, got {min_len}, {max_len}")
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        length = rng.randint(min_len, max_len)
        label = LABELS[rng.randrange(3)]
        if label == "neutral":
            out.append(Sentence(tuple(rng.choice(FILLER) for _ in range(length)), label, None))
            continue
        words = [rng.choice(FILLER) for _ in range(length - 1)]
        cue = rng.randrange(length)
        words.insert(cue, rng.choice(POSITIVE if label == "positive" else NEGATIVE))
        out.append(Sentence(tuple(words), label, cue))
    return out


def write_tsv(examples: list[Sentence], path: str | Path) -> str:
    """``label<TAB>text`` lines, the files of a ``data.task: tsv`` text experiment; the path."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(f"{e.label}\t{e.text}\n" for e in examples), encoding="utf-8")
    return str(path)


def write_splits(
    directory: str | Path, n_train: int, n_dev: int, n_test: int, max_len: int = 30, seed: int = 0
) -> tuple[dict[str, str], dict[str, list[Sentence]]]:
    """Train, dev and test files in ``directory`` (each split its own draw): ``(paths, splits)``,
    the paths ready for ``data.train/dev/test``."""
    sizes = {"train": n_train, "dev": n_dev, "test": n_test}
    splits = {
        name: sentences(size, max_len=max_len, seed=seed * 3 + k)
        for k, (name, size) in enumerate(sizes.items())
    }
    paths = {name: write_tsv(s, Path(directory) / f"{name}.tsv") for name, s in splits.items()}
    return paths, splits
