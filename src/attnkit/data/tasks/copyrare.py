"""``copyrare``: requests with names and numbers to carry over, most of them never seen before.

A copy-heavy task for the pointer-generator (See et al. 2017; ``model.copy``). Each source is
one of a few templates filled with names and numbers drawn from pools far larger than any
training set (343,000 made-up names of three syllables, and every number from 100
to 999,999); the target is a short command holding the same names and numbers, sometimes in
another order::

    send 48213 dollars to bokarime   ->   pay bokarime 48213
    tukela owes mivoda 907 dollars   ->   owe tukela mivoda 907

So almost every name and number of the test set is new: a model that can only write words of
its vocabulary writes ``<unk>`` for them, one that copies writes them. :func:`slot_accuracy`
scores just those words. Whitespace-tokenized on both sides; no download.
"""

from __future__ import annotations

import random
from collections.abc import Sequence

from attnkit.data.tasks.base import Pair, Splits, split_disjoint

#: (source, target) templates; {a} and {b} are names, {n} a number
TEMPLATES: tuple[tuple[str, str], ...] = (
    ("please call {a} at {n}", "call {a} {n}"),
    ("call {a} on {n} please", "call {a} {n}"),
    ("{a} can be reached at {n}", "call {a} {n}"),
    ("send {n} dollars to {a}", "pay {a} {n}"),
    ("pay {a} {n} dollars today", "pay {a} {n}"),
    ("{a} owes {b} {n} dollars", "owe {a} {b} {n}"),
    ("tell {a} that {b} called", "message {a} {b}"),
    ("{a} and {b} meet at {n}", "meet {a} {b} {n}"),
    ("remind {a} to call {b}", "remind {a} {b}"),
    ("book a table for {a} at {n}", "book {a} {n}"),
)
_CONSONANTS = "bdfgklmnprstvz"
_VOWELS = "aeiou"
#: every word of the templates: any other word of a target is a name or a number
TEMPLATE_WORDS = frozenset(
    w for pair in TEMPLATES for side in pair for w in side.split() if not w.startswith("{")
)


def make_name(rng: random.Random) -> str:
    """A made-up name of three consonant-vowel syllables (70 ** 3 = 343,000 possible)."""
    return "".join(rng.choice(_CONSONANTS) + rng.choice(_VOWELS) for _ in range(3))


def make_number(rng: random.Random) -> str:
    """A number from 100 to 999,999, its digits as one word."""
    return str(rng.randint(100, 999_999))


def make_pair(rng: random.Random) -> Pair:
    """One (source, target) pair: a template filled with two distinct names and a number."""
    source, target = rng.choice(TEMPLATES)
    a = make_name(rng)
    b = make_name(rng)
    while b == a:
        b = make_name(rng)
    slots = {"a": a, "b": b, "n": make_number(rng)}
    return source.format(**slots), target.format(**slots)


def generate(seed: int = 0, n_train: int = 6000, n_dev: int = 300, n_test: int = 500) -> Splits:
    """Disjoint train/dev/test splits (no source in two of them), a function of ``seed``."""
    if min(n_train, n_dev, n_test) < 1:
        raise ValueError("copyrare: train, dev and test sizes must be at least 1")
    rng = random.Random(seed)
    total = n_train + n_dev + n_test
    pairs = [make_pair(rng) for _ in range(total + total // 50 + 10)]  # spare for duplicates
    splits = split_disjoint(pairs, n_dev, n_test, seed)
    splits.train = splits.train[:n_train]
    return splits


def slots(target: str) -> list[tuple[int, str]]:
    """(position, word) of every name and number of a target."""
    return [(i, w) for i, w in enumerate(target.split()) if w not in TEMPLATE_WORDS]


def slot_accuracy(outputs: Sequence[str], references: Sequence[str]) -> float:
    """The share of the references' names and numbers that the outputs hold at the same
    position (0 when there are none)."""
    right = total = 0
    for output, reference in zip(outputs, references):
        words = output.split()
        for i, word in slots(reference):
            total += 1
            right += i < len(words) and words[i] == word
    return right / total if total else 0.0


def unseen_share(train: Sequence[Pair], test: Sequence[Pair]) -> float:
    """The share of the test targets' names and numbers that no training target holds."""
    seen = {w for _, target in train for _, w in slots(target)}
    words = [w for _, target in test for _, w in slots(target)]
    return sum(w not in seen for w in words) / len(words) if words else 0.0
