"""What every task produces: train/dev/test lists of ``(source, target)`` text pairs.

Generated tasks (numbers, dates) build one pool of pairs and cut it with
:func:`split_disjoint`, so a source string seen in training never appears in
dev or test: the held-out scores measure generalisation, not recall.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

Pair = tuple[str, str]
"""``(source text, target text)``."""


@dataclass
class Splits:
    """The three lists of pairs a task hands to training and evaluation."""

    train: list[Pair]
    dev: list[Pair]
    test: list[Pair]

    def sizes(self) -> dict[str, int]:
        """``{"train": n, "dev": n, "test": n}``, handy for logging."""
        return {"train": len(self.train), "dev": len(self.dev), "test": len(self.test)}


def dedupe_pairs(pairs: list[Pair]) -> list[Pair]:
    """Distinct pairs sorted by source; a source with two different targets is a ValueError."""
    target_of: dict[str, str] = {}
    for src, tgt in pairs:
        seen = target_of.setdefault(src, tgt)
        if seen != tgt:
            raise ValueError(f"source {src!r} has two different targets, {seen!r} and {tgt!r}")
    return sorted(target_of.items())


def split_disjoint(pairs: list[Pair], n_dev: int, n_test: int, seed: int) -> Splits:
    """Dedupe by source, shuffle with ``random.Random(seed)``, cut into test, dev and train.

    The result depends only on the set of pairs and the seed, not on the input
    order. Test takes the first ``n_test`` shuffled sources, dev the next
    ``n_dev``, train the rest, so no source string is in two splits.

    Raises ValueError when a source maps to two different targets (a generator
    bug) or when ``n_dev + n_test`` exceeds the number of distinct sources.
    """
    if n_dev < 0 or n_test < 0:
        raise ValueError(f"n_dev and n_test must be >= 0, got n_dev={n_dev}, n_test={n_test}")
    unique = dedupe_pairs(pairs)
    if n_dev + n_test > len(unique):
        raise ValueError(
            f"cannot hold out n_dev={n_dev} + n_test={n_test} pairs: only {len(unique)} distinct "
            "sources"
        )
    random.Random(seed).shuffle(unique)
    test = unique[:n_test]
    dev = unique[n_test : n_test + n_dev]
    train = unique[n_test + n_dev :]
    return Splits(train=train, dev=dev, test=test)
