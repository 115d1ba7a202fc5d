"""The bottleneck's data: digit words of growing length to digits, and accuracy by length.

``"seven three nine one" -> "7 3 9 1"``: each source word names one output digit, so what the
encoder must pass to the decoder grows with the source (about 3.3 bits a word). A decoder that
reads one fixed vector runs out of room as the source grows; one that attends reads each word
where it stands. Lengths are drawn uniformly, so every length is as common in test as in train.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from pathlib import Path

from attnkit.data.tasks.base import Pair, Splits, split_disjoint

DIGIT_WORDS = ("zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine")


def digit_pairs(n: int, min_len: int = 1, max_len: int = 20, seed: int = 0) -> list[Pair]:
    """``n`` pairs ``(digit words, digits)`` of ``min_len..max_len`` digits each, spaced (word
    level on both sides); lengths uniform. Sources may repeat (split_disjoint dedupes)."""
    if not 1 <= min_len <= max_len:
        raise ValueError(f"need 1 <= min_len <= max_len, got {min_len}, {max_len}")
    rng = random.Random(seed)
    pairs = []
    for _ in range(n):
        digits = [rng.randrange(10) for _ in range(rng.randint(min_len, max_len))]
        pairs.append((" ".join(DIGIT_WORDS[d] for d in digits), " ".join(map(str, digits))))
    return pairs


def digit_splits(n_train: int, n_dev: int, n_test: int, max_len: int = 20, seed: int = 0) -> Splits:
    """Disjoint splits (no source in two) of :func:`digit_pairs`; short sources repeat, so
    somewhat more are drawn than asked and train takes what is left."""
    total = n_train + n_dev + n_test
    pairs = digit_pairs(int(total * 1.1) + 20, max_len=max_len, seed=seed)
    splits = split_disjoint(pairs, n_dev=n_dev, n_test=n_test, seed=seed)
    return Splits(splits.train[:n_train], splits.dev, splits.test)


def write_splits(splits: Splits, directory: str | Path) -> dict[str, str]:
    """``train.tsv``, ``dev.tsv``, ``test.tsv`` (source, tab, target) in ``directory``: the
    ``data.train/dev/test`` of a ``parallel`` task."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    paths = {}
    for name in ("train", "dev", "test"):
        path = directory / f"{name}.tsv"
        path.write_text("".join(f"{s}\t{t}\n" for s, t in getattr(splits, name)), "utf-8")
        paths[name] = str(path)
    return paths


def accuracy_by_length(
    outputs: Sequence[str], pairs: Sequence[Pair], edges: Sequence[int]
) -> list[dict]:
    """Exact match (%) of ``outputs`` against the targets of ``pairs``, by source length in
    words: bucket k holds lengths ``edges[k] .. edges[k+1] - 1`` (the last bucket is open).
    Returns ``[{"lengths": "1-5", "items": n, "exact": pct}, ...]``; an empty bucket has
    ``exact`` None."""
    if len(outputs) != len(pairs):
        raise ValueError(f"{len(outputs)} outputs for {len(pairs)} pairs")
    rows = []
    for k, low in enumerate(edges):
        high = edges[k + 1] - 1 if k + 1 < len(edges) else None
        right = [
            out == tgt
            for out, (src, tgt) in zip(outputs, pairs)
            if len(src.split()) >= low and (high is None or len(src.split()) <= high)
        ]
        label = f"{low}-{high}" if high is not None else f"{low}+"
        exact = round(100.0 * sum(right) / len(right), 2) if right else None
        rows.append({"lengths": label, "items": len(right), "exact": exact})
    return rows
