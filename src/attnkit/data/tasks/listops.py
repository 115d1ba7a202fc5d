"""``listops``: nested list operations over digits, the long-range task of Long Range Arena.

ListOps (Nangia & Bowman 2018), in the form Long Range Arena uses (Tay et al. 2021): an
expression of four operators over the digits 0-9, written as tokens, whose value is one digit::

    [MAX 2 9 [MIN 4 7 ] 0 ]                  ->  9
    [SM [MED 3 8 5 ] 6 [MAX 1 [MIN 0 4 ] ] ] ->  0      (sum mod 10 of 5, 6, 1)

``[MAX`` / ``[MIN``: the largest / smallest argument; ``[MED``: the median, rounded down (LRA's
``int(np.median(...))``); ``[SM``: the sum mod 10. Each operator takes 2 to ``max_args``
arguments, each a digit or another expression; ``]`` closes it. The answer depends on every
token, so a model must carry information across the whole sequence: this is why LRA uses it
(lengths up to 2,000 tokens). Whitespace-tokenized; no download.

The generator is LRA's: below ``max_depth``, a node is an operator with probability
:data:`OPERATOR_SHARE` (0.25), else a digit (the root is always an operator); expressions whose
length in tokens lies outside [``min_length``, ``max_length``] are drawn again. Each draw stops
as soon as it passes ``max_length`` tokens, and the number of draws is capped, so generating
costs bounded time and memory whatever the settings (a setting that almost never gives a length
in range is refused, saying which knob to move).

:func:`evaluate` reads an expression with an explicit stack (no recursion), bounded in tokens;
LRA's released files write parentheses around sub-lists, which it skips. :func:`read_tsv` reads
such a file (``Source<TAB>Target`` lines).
"""

from __future__ import annotations

import random
import statistics
from collections.abc import Callable
from pathlib import Path

from attnkit.data.bounded import text_lines
from attnkit.data.tasks.base import Pair, Splits, split_disjoint
from attnkit.errors import DataError

#: operator token -> its function of the argument list (each a digit 0-9) -> a digit 0-9
OPERATORS: dict[str, Callable[[list[int]], int]] = {
    "[MAX": max,
    "[MIN": min,
    "[MED": lambda xs: int(statistics.median(xs)),
    "[SM": lambda xs: sum(xs) % 10,
}
CLOSE = "]"
DIGITS = tuple(str(d) for d in range(10))
#: the probability that a node above the depth limit is an operator (LRA's 1 - VALUE_P)
OPERATOR_SHARE = 0.25
#: the longest expression :func:`evaluate` reads (LRA's longest is 2,000 tokens)
MAX_TOKENS = 100_000
#: draws per expression wanted, at most, before the settings are refused
DRAWS_PER_EXAMPLE = 400


class _TooLong(Exception):
    """A draw passed ``max_length`` tokens (it is dropped)."""


def _draw(rng: random.Random, max_depth: int, max_args: int, max_length: int) -> list[str]:
    """The tokens of one random expression, or _TooLong as soon as it passes ``max_length``.

    Depth-first with an explicit stack of how many arguments each open operator still needs."""
    tokens: list[str] = []
    pending: list[int] = []  # per open operator: arguments still to write
    depth = 0
    while True:
        if depth == 0 or (depth < max_depth and rng.random() < OPERATOR_SHARE):
            tokens.append(rng.choice(tuple(OPERATORS)))
            pending.append(rng.randint(2, max_args))
            depth += 1
        else:
            tokens.append(rng.choice(DIGITS))
            pending[-1] -= 1
        while pending and pending[-1] == 0:  # close every operator that has all its arguments
            tokens.append(CLOSE)
            pending.pop()
            depth -= 1
            if pending:
                pending[-1] -= 1
        if len(tokens) > max_length:
            raise _TooLong
        if not pending:
            return tokens


def evaluate(source: str, max_tokens: int = MAX_TOKENS) -> int:
    """The digit an expression (whitespace-separated tokens) evaluates to.

    ValueError, one line naming the token, for anything that is not one well-formed expression:
    an unknown token, ``]`` with no open operator, an operator with fewer than two arguments,
    an unclosed operator, text after the end, or more than ``max_tokens`` tokens. ``(`` and
    ``)`` (LRA's files) are skipped."""
    tokens = source.split()
    if len(tokens) > max_tokens:
        raise ValueError(f"listops: {len(tokens)} tokens, more than the limit of {max_tokens}")
    stack: list[tuple[str, list[int]]] = []
    result: int | None = None
    for i, token in enumerate(tokens):
        if token in ("(", ")"):
            continue
        if result is not None:
            raise ValueError(f"listops: token {i + 1} {token!r} after the end of the expression")
        if token in OPERATORS:
            stack.append((token, []))
        elif token == CLOSE:
            if not stack:
                raise ValueError(f"listops: token {i + 1} ']' closes no operator")
            op, args = stack.pop()
            if len(args) < 2:
                raise ValueError(f"listops: token {i + 1} closes {op} with {len(args)} argument(s)")
            value = OPERATORS[op](args)
            if stack:
                stack[-1][1].append(value)
            else:
                result = value
        elif token in DIGITS:
            if not stack:
                raise ValueError(f"listops: token {i + 1} {token!r} is outside any operator")
            stack[-1][1].append(int(token))
        else:
            raise ValueError(
                f"listops: token {i + 1} {token[:20]!r} is not an operator, ] or digit"
            )
    if stack or result is None:
        raise ValueError(f"listops: {len(stack) or 'no'} operator(s) left open at the end")
    return result


def check_settings(max_depth: int, max_args: int, min_length: int, max_length: int) -> None:
    """ValueError (one line) for settings no expression can meet."""
    if max_depth < 1 or max_depth > 100:
        raise ValueError(f"listops: max_depth must be from 1 to 100, got {max_depth}")
    if max_args < 2:
        raise ValueError(f"listops: max_args must be at least 2, got {max_args}")
    if min_length < 4 or max_length < min_length:
        raise ValueError(
            f"listops: need 4 <= min_length <= max_length, got {min_length} and {max_length}"
        )
    if max_length > MAX_TOKENS:
        raise ValueError(f"listops: max_length {max_length} is above the limit of {MAX_TOKENS}")


def make_expressions(
    rng: random.Random, count: int, max_depth: int, max_args: int, min_length: int, max_length: int
) -> list[str]:
    """``count`` expressions of ``min_length`` to ``max_length`` tokens (duplicates possible);
    ValueError when :data:`DRAWS_PER_EXAMPLE` draws per expression do not give them."""
    check_settings(max_depth, max_args, min_length, max_length)
    found: list[str] = []
    budget = DRAWS_PER_EXAMPLE * count + 1000
    for _ in range(budget):
        if len(found) == count:
            return found
        try:
            tokens = _draw(rng, max_depth, max_args, max_length)
        except _TooLong:
            continue
        if len(tokens) >= min_length:
            found.append(" ".join(tokens))
    if len(found) == count:
        return found
    raise ValueError(
        f"listops: {budget} draws gave {len(found)} of {count} expressions of {min_length} to "
        f"{max_length} tokens; widen the lengths, or raise max_args / max_depth for longer ones"
    )


def generate(
    seed: int = 0,
    n_train: int = 10000,
    n_dev: int = 500,
    n_test: int = 1000,
    max_depth: int = 10,
    max_args: int = 10,
    min_length: int = 500,
    max_length: int = 2000,
) -> Splits:
    """Disjoint train/dev/test splits of (expression, answer digit) pairs, a function of the
    arguments (the defaults are LRA's: depth 10, 10 arguments, 500 to 2,000 tokens)."""
    if min(n_train, n_dev, n_test) < 1:
        raise ValueError("listops: train, dev and test sizes must be at least 1")
    rng = random.Random(seed)
    total = n_train + n_dev + n_test
    sources = make_expressions(
        rng, total + total // 50 + 10, max_depth, max_args, min_length, max_length
    )  # spare for duplicates
    pairs = [(source, str(evaluate(source))) for source in sources]
    splits = split_disjoint(pairs, n_dev, n_test, seed)
    splits.train = splits.train[:n_train]
    return splits


def read_tsv(path: str | Path, max_tokens: int = MAX_TOKENS) -> list[Pair]:
    """The (source, target) pairs of a ListOps file in LRA's layout: ``Source<TAB>Target``
    lines, a header line of those words allowed first. Read with attnkit's bounded reader; each
    target must be the digit its source evaluates to. DataError naming ``file:line`` otherwise."""
    pairs: list[Pair] = []
    for number, line in text_lines(path):
        fields = line.split("\t")
        if len(fields) != 2:
            raise DataError(
                f"expected 'source<TAB>target', got {len(fields)} field(s)", path, number
            )
        source, target = fields[0].strip(), fields[1].strip()
        if not pairs and (source, target) == ("Source", "Target"):
            continue
        try:
            value = evaluate(source, max_tokens)
        except ValueError as exc:
            raise DataError(str(exc), path, number) from None
        if target != str(value):
            raise DataError(
                f"target {target[:20]!r}, but the source evaluates to {value}", path, number
            )
        pairs.append((" ".join(t for t in source.split() if t not in ("(", ")")), target))
    if not pairs:
        raise DataError("no examples", path)
    return pairs
