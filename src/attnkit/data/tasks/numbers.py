"""Number translation: spelled-out numbers <-> digits, in four languages, character level.

Generated with ``num2words``, so it needs no download and trains in minutes on
a CPU. It is small, but it makes attention earn its keep:

* ``words2digits``: ``"siebenundneunzig" -> "97"``. German (and Danish-style)
  compounds name the units *before* the tens, so the decoder writing ``9``
  must look at ``neunzig`` near the end of the source and then jump back to
  ``sieben`` for ``7``: a non-monotonic alignment that shows up clearly in
  the attention heatmap. French ``quatre-vingt-dix-sept`` (4*20+10+7) needs
  several source words for one output digit.
* ``digits2words``: ``"de: 97" -> "siebenundneunzig"``, the reverse; the
  language tag tells the decoder which language to write.
* ``both``: the union of the two.

Every number in ``0..max_number`` is used once per language; dev and test
default to 10% each of the distinct sources, and no source string is in two
splits.

With ``count`` > 1 (:func:`generate_lists`) each item is ``count`` numbers of
one language written one after another, ``"sieben, zwölf" -> "7 12"``: the
same translation at inputs of hundreds of characters (about 24 a number), the
long-input variant on which the attention implementations differ in cost.
"""

from __future__ import annotations

import random

from num2words import num2words

from attnkit.data.tasks.alignment import (
    Alignment,
    changed_positions,
    insertion_points,
    whole_words,
    word_at,
)
from attnkit.data.tasks.base import Pair, Splits, dedupe_pairs, split_disjoint

LANGUAGES = ("en", "de", "fr", "es")
DIRECTIONS = ("words2digits", "digits2words", "both")


def _check_args(languages, direction: str, max_number: int) -> tuple[str, ...]:
    if isinstance(languages, str):
        languages = (languages,)
    languages = tuple(languages)
    if not languages:
        raise ValueError(f"languages is empty; choose from {', '.join(LANGUAGES)}")
    for lang in languages:
        if lang not in LANGUAGES:
            raise ValueError(f"unknown language {lang!r}; valid languages: {', '.join(LANGUAGES)}")
    if direction not in DIRECTIONS:
        raise ValueError(
            f"unknown direction {direction!r}; valid directions: {', '.join(DIRECTIONS)}"
        )
    if isinstance(max_number, bool) or not isinstance(max_number, int) or max_number < 1:
        raise ValueError(f"max_number must be an integer >= 1, got {max_number!r}")
    return languages


def make_pairs(
    languages=LANGUAGES, direction: str = "words2digits", max_number: int = 999
) -> list[Pair]:
    """All pairs of the task, in a fixed order (not deduplicated, not split)."""
    languages = _check_args(languages, direction, max_number)
    pairs: list[Pair] = []
    for lang in languages:
        for n in range(max_number + 1):
            words = num2words(n, lang=lang)
            if direction in ("words2digits", "both"):
                pairs.append((words, str(n)))
            if direction in ("digits2words", "both"):
                pairs.append((f"{lang}: {n}", words))
    return pairs


def generate(
    seed: int = 0,
    languages=LANGUAGES,
    direction: str = "words2digits",
    max_number: int = 999,
    n_dev: int | None = None,
    n_test: int | None = None,
) -> Splits:
    """Number-translation splits.

    Args:
        seed: shuffles the pool before cutting; same seed, same splits.
        languages: any of ``LANGUAGES``.
        direction: ``"words2digits"``, ``"digits2words"`` or ``"both"``.
        max_number: numbers ``0..max_number`` (inclusive) are used.
        n_dev, n_test: held-out sizes; default 10% each of the distinct sources.

    Raises ValueError naming the bad value and the valid ones.
    """
    pairs = dedupe_pairs(make_pairs(languages, direction, max_number))
    if n_dev is None:
        n_dev = round(0.1 * len(pairs))
    if n_test is None:
        n_test = round(0.1 * len(pairs))
    return split_disjoint(pairs, n_dev=n_dev, n_test=n_test, seed=seed)


LIST_SEPARATOR = ", "
"""Between the numbers of a list's words; the digits are separated by one space."""


def check_list_args(count: int, sizes: tuple[int, int, int]) -> None:
    """ValueError naming the bad value: ``count`` >= 2, each of train/dev/test sizes >= 1."""
    if isinstance(count, bool) or not isinstance(count, int) or count < 2:
        raise ValueError(f"count must be an integer >= 2 for lists, got {count!r}")
    for name, size in zip(("train_size", "dev_size", "test_size"), sizes):
        if isinstance(size, bool) or not isinstance(size, int) or size < 1:
            raise ValueError(f"{name} must be an integer >= 1, got {size!r}")


def _list_pairs(words: list[str], numbers: list[int], lang: str, direction: str) -> list[Pair]:
    pairs = []
    digits = " ".join(map(str, numbers))
    if direction in ("words2digits", "both"):
        pairs.append((LIST_SEPARATOR.join(words), digits))
    if direction in ("digits2words", "both"):
        pairs.append((f"{lang}: {digits}", LIST_SEPARATOR.join(words)))
    return pairs


def generate_lists(
    seed: int = 0,
    languages=LANGUAGES,
    direction: str = "words2digits",
    max_number: int = 999,
    count: int = 20,
    sizes: tuple[int, int, int] = (20000, 1000, 1000),
) -> Splits:
    """Splits of lists: each item ``count`` numbers of ``0..max_number`` drawn with
    ``random.Random(seed)`` in one language (drawn per item from ``languages``), the words joined
    by :data:`LIST_SEPARATOR`, the digits by a space. ``sizes`` are the distinct items of train,
    dev and test (``both`` gives each item's two pairs, so about twice as many); no source is in
    two splits, and every number of every split is one training also sees, at other places.

    Raises ValueError naming the bad value, or saying the lists this ``max_number``, ``count``
    and ``languages`` allow are too few to draw ``sizes`` distinct ones with room to spare.
    """
    languages = _check_args(languages, direction, max_number)
    check_list_args(count, sizes)
    wanted = sum(sizes)
    possible = len(languages) * (max_number + 1) ** count
    if possible < 2 * wanted:  # room to spare: drawing distinct lists ends in ~wanted draws
        raise ValueError(
            f"{len(languages)} language(s) x {max_number + 1}^{count} lists are too few to draw "
            f"{wanted} distinct ones (train_size + dev_size + test_size): at least twice as many "
            "are needed; raise max_number or count, or lower the sizes"
        )
    rng = random.Random(seed)
    cache: dict[tuple[str, int], str] = {}  # num2words is slow: each (language, number) once
    drawn: set[tuple] = set()
    items: list[list[Pair]] = []
    while len(items) < wanted:
        lang = rng.choice(languages)
        numbers = [rng.randint(0, max_number) for _ in range(count)]
        if (lang, *numbers) in drawn:
            continue
        drawn.add((lang, *numbers))
        for n in numbers:
            if (lang, n) not in cache:
                cache[lang, n] = num2words(n, lang=lang)
        words = [cache[lang, n] for n in numbers]
        items.append(_list_pairs(words, numbers, lang, direction))
    n_train, n_dev, _ = sizes
    # a list whose words two languages share ("six, six" in en and fr) is one pair, in one split
    train = dedupe_pairs([p for item in items[:n_train] for p in item])
    dev = dedupe_pairs([p for item in items[n_train : n_train + n_dev] for p in item])
    test = dedupe_pairs([p for item in items[n_train + n_dev :] for p in item])
    held_out = {s for s, _ in dev} | {s for s, _ in test}
    train = [p for p in train if p[0] not in held_out]
    dev = [p for p in dev if p[0] not in {s for s, _ in test}]
    for split in (train, dev, test):
        rng.shuffle(split)
    return Splits(train=train, dev=dev, test=test)


def _named_by_digit(n: int, lang: str) -> list[set[int]]:
    """For each digit of ``n`` (most significant first), the positions of ``num2words(n)`` that
    change when that digit takes any other value (the leading digit of a multi-digit number
    ranges over 1-9, so the number keeps its length), gaps inside a word filled. A 1 that no
    word writes (French ``cent``, Spanish ``mil``: other values only insert a word before it) is
    named by the word it multiplies."""
    words, digits = num2words(n, lang=lang), str(n)
    named = []
    for k, d in enumerate(digits):
        lowest = 1 if k == 0 and len(digits) > 1 else 0
        changed: set[int] = set()
        for other in range(lowest, 10):
            if str(other) == d:
                continue
            variant = num2words(int(digits[:k] + str(other) + digits[k + 1 :]), lang=lang)
            # a zero is named by nothing: the words other values add are not its
            rewritten = changed_positions(words, variant, grown_words=d != "0")
            if not rewritten and d != "0":  # an implied 1 ("cent", "mil"): the word it multiplies
                for point in insertion_points(words, variant):
                    rewritten |= word_at(words, point)
            changed |= rewritten
        named.append(whole_words(words, changed))
    return named


def gold_alignment(source: str, target: str, languages=LANGUAGES) -> Alignment | None:
    """Gold links of one pair of this task (see :mod:`attnkit.data.tasks.alignment`), or None
    where the pair is not one the generator writes in ``languages``.

    ``words2digits`` pairs link output digit k to the source characters digit k names;
    ``digits2words`` pairs (``"de: 97"``) link each output character to the source digits that
    name it (the language tag names nothing).
    """
    for lang in languages:
        if target.isdigit() and num2words(int(target), lang=lang) == source:
            named = _named_by_digit(int(target), lang)
            return Alignment.from_possible({(k, i) for k, span in enumerate(named) for i in span})
        prefix = f"{lang}: "
        number = source[len(prefix) :]
        if source.startswith(prefix) and number.isdigit() and str(int(number)) == number:
            if num2words(int(number), lang=lang) != target:
                return None
            named = _named_by_digit(int(number), lang)
            offset = len(prefix)
            return Alignment.from_possible(
                {(j, offset + k) for k, span in enumerate(named) for j in span}
            )
    return None
