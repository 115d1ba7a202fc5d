"""Date normalisation: dates written the way people write them -> ISO 8601, character level.

``"Dienstag, 4. März 1997" -> "1997-03-04"``, ``"3/4/97" -> "1997-03-04"``,
``"4 de marzo de 1997" -> "1997-03-04"``. Dates are drawn uniformly from
``start_year-01-01 .. end_year-12-31`` and written with Babel
(``babel.dates.format_date``) in a random locale and a random format: Babel's
``short``/``medium``/``long``/``full`` plus a few explicit CLDR patterns.
Generated, so it needs no download.

The attention is interesting because the output order (year, month, day) is
fixed while the input order depends on the locale, and month names must be
read as a whole word to produce two digits.

Every source string determines its target:

* numeric sources (``3/4/97`` in en_US, ``04/03/97`` in it_IT) are parsed with
  every numeric pattern in use; a source that more than one pattern reads as
  different dates is dropped, whether or not the other reading was drawn;
* any source that was nevertheless drawn for two different dates is dropped
  with all its pairs;
* two-digit years are only used when ``end_year - start_year < 100``, so
  ``"97"`` means exactly one year.

:func:`sample` gives the pairs with the locale and format that wrote them;
:func:`generate` cuts them into disjoint splits.
"""

from __future__ import annotations

import datetime as dt
import random
import re
from dataclasses import dataclass
from functools import cache

from babel import Locale
from babel.core import UnknownLocaleError
from babel.dates import format_date, tokenize_pattern

from attnkit.data.tasks.alignment import Alignment
from attnkit.data.tasks.base import Splits, split_disjoint

DEFAULT_LOCALES = ("en_US", "en_GB", "de_DE", "fr_FR", "es_ES", "it_IT", "nl_NL", "pt_BR")
NAMED_FORMATS = ("short", "medium", "long", "full")
DEFAULT_FORMATS = NAMED_FORMATS + ("d MMM y", "EEEE d MMMM y", "dd.MM.y", "MMMM d, y")

# CLDR fields a purely numeric pattern may contain, with the regex for exactly
# the digits Babel writes for them (one letter: no leading zero; two: padded).
_NUMERIC_FIELDS = {
    ("d", 1): r"[1-9]\d?",
    ("d", 2): r"\d{2}",
    ("M", 1): r"[1-9]\d?",
    ("M", 2): r"\d{2}",
    ("L", 1): r"[1-9]\d?",
    ("L", 2): r"\d{2}",
    ("y", 1): r"[1-9]\d*",
    ("y", 2): r"\d{2}",
}


@dataclass(frozen=True)
class DateSample:
    """One generated pair with the locale and format (named or CLDR pattern) that wrote it."""

    source: str
    target: str
    locale: str
    format: str


@dataclass(frozen=True)
class _Writer:
    locale: str
    format: str
    pattern: str  # resolved CLDR pattern
    babel_locale: Locale
    numeric: bool  # output has digits and separators only


@cache
def _babel_locale(name: str) -> Locale:
    try:
        return Locale.parse(name)
    except (UnknownLocaleError, ValueError, TypeError) as exc:
        raise ValueError(
            f"unknown locale {name!r} ({exc}); e.g. {', '.join(DEFAULT_LOCALES)}"
        ) from None


def _fields(pattern: str) -> list[tuple[str, int]]:
    return [tok[1] for tok in tokenize_pattern(pattern) if tok[0] == "field"]


def _is_numeric(pattern: str) -> bool:
    return all(f in _NUMERIC_FIELDS or (f[0] == "y" and f[1] != 2) for f in _fields(pattern))


def _make_writers(locales, formats, two_digit_years: bool) -> list[list[_Writer]]:
    """Per locale, the writers it may use; locales left with none are dropped."""
    if isinstance(locales, str):
        locales = (locales,)
    if isinstance(formats, str):
        formats = (formats,)
    if not locales:
        raise ValueError(f"locales is empty; e.g. {', '.join(DEFAULT_LOCALES)}")
    if not formats:
        raise ValueError(f"formats is empty; e.g. {', '.join(DEFAULT_FORMATS)}")
    probe = dt.date(2001, 2, 3)
    out = []
    for name in dict.fromkeys(locales):
        loc = _babel_locale(name)
        writers = []
        for fmt in dict.fromkeys(formats):
            pattern = str(loc.date_formats[fmt].pattern) if fmt in NAMED_FORMATS else fmt
            try:
                fields = _fields(pattern)
                format_date(probe, pattern, locale=loc)
            except Exception as exc:  # Babel raises several types for bad patterns
                raise ValueError(
                    f"bad date format {fmt!r} ({exc}); use one of {NAMED_FORMATS} or a CLDR pattern"
                ) from None
            letters = {f[0] for f in fields}
            if not ({"d", "y"} <= letters and letters & {"M", "L"}):
                raise ValueError(
                    f"date format {fmt!r} (pattern {pattern!r}) must contain a day, a month and a "
                    "year"
                )
            if not two_digit_years and ("y", 2) in fields:
                continue
            writers.append(_Writer(name, fmt, pattern, loc, _is_numeric(pattern)))
        if writers:
            out.append(writers)
    if not out:
        raise ValueError(
            "every format writes two-digit years, which are ambiguous over more than 100 years"
        )
    return out


def _numeric_parsers(
    writers: list[list[_Writer]],
) -> list[tuple[re.Pattern, list[tuple[str, int]]]]:
    """One full-match regex per distinct numeric pattern, with its fields in order."""
    parsers = {}
    for w in (w for ws in writers for w in ws if w.numeric):
        if w.pattern in parsers:
            continue
        parts, fields = [], []
        for kind, value in tokenize_pattern(w.pattern):
            if kind == "chars":
                parts.append(re.escape(value))
            else:
                parts.append("(" + _NUMERIC_FIELDS.get(value, rf"\d{{{value[1]},}}") + ")")
                fields.append(value)
        parsers[w.pattern] = (re.compile("".join(parts)), fields)
    return list(parsers.values())


def _readings(source: str, parsers, start_year: int, end_year: int) -> set[dt.date]:
    """Every in-range date that some numeric pattern reads ``source`` as."""
    found = set()
    for regex, fields in parsers:
        m = regex.fullmatch(source)
        if m is None:
            continue
        parts = {}
        for (letter, count), digits in zip(fields, m.groups()):
            value = int(digits)
            if letter == "y" and count == 2:  # the one year in the (<= 100 year) window
                value = start_year + (value - start_year) % 100
            parts["M" if letter == "L" else letter] = value
        try:
            day = dt.date(parts["y"], parts["M"], parts["d"])
        except ValueError:
            continue
        if start_year <= day.year <= end_year:
            found.add(day)
    return found


def sample(
    seed: int = 0,
    n: int = 22000,
    locales=DEFAULT_LOCALES,
    start_year: int = 1950,
    end_year: int = 2049,
    formats=DEFAULT_FORMATS,
) -> list[DateSample]:
    """Exactly ``n`` samples with distinct, unambiguous sources, deterministic from ``seed``.

    Each draw picks a date uniformly, then a locale, then one of that locale's
    formats. Raises ValueError for bad arguments, or when ``n`` distinct
    sources cannot be found (a date range too small for ``n``).
    """
    if not (1 <= start_year <= end_year <= 9999):
        raise ValueError(
            f"need 1 <= start_year <= end_year <= 9999, got start_year={start_year}, "
            f"end_year={end_year}"
        )
    if n < 0:
        raise ValueError(f"n must be >= 0, got {n}")
    writers = _make_writers(locales, formats, two_digit_years=end_year - start_year < 100)
    parsers = _numeric_parsers(writers)
    rng = random.Random(seed)
    lo, hi = dt.date(start_year, 1, 1).toordinal(), dt.date(end_year, 12, 31).toordinal()
    found: dict[str, DateSample] = {}
    banned: set[str] = set()
    draws, max_draws = 0, 20 * n + 10_000
    while len(found) < n:
        draws += 1
        if draws > max_draws:
            raise ValueError(
                f"found only {len(found)} distinct unambiguous dates of the {n} asked for in "
                f"{start_year}-{end_year}; widen the year range or ask for fewer"
            )
        day = dt.date.fromordinal(rng.randint(lo, hi))
        w = rng.choice(rng.choice(writers))
        source = format_date(day, w.pattern, locale=w.babel_locale)
        if source in banned:
            continue
        target = day.isoformat()
        prev = found.get(source)
        if prev is None:
            if w.numeric and len(_readings(source, parsers, start_year, end_year)) > 1:
                banned.add(source)
                continue
            found[source] = DateSample(source, target, w.locale, w.format)
        elif prev.target != target:  # drawn for two dates: drop every pair of it
            banned.add(source)
            del found[source]
    return list(found.values())


def generate(
    seed: int = 0,
    n_train: int = 20000,
    n_dev: int = 1000,
    n_test: int = 1000,
    locales=DEFAULT_LOCALES,
    start_year: int = 1950,
    end_year: int = 2049,
    formats=DEFAULT_FORMATS,
) -> Splits:
    """Date-normalisation splits with exactly ``n_train``/``n_dev``/``n_test`` distinct sources.

    ``formats`` holds Babel's named formats and/or CLDR patterns (each must
    write a day, a month and a year). The same arguments give the same splits;
    :func:`sample` with ``n = n_train + n_dev + n_test`` gives the same pairs
    with the locale and format of each.
    """
    for name, value in (("n_train", n_train), ("n_dev", n_dev), ("n_test", n_test)):
        if value < 0:
            raise ValueError(f"{name} must be >= 0, got {value}")
    samples = sample(seed, n_train + n_dev + n_test, locales, start_year, end_year, formats)
    pairs = [(s.source, s.target) for s in samples]
    return split_disjoint(pairs, n_dev=n_dev, n_test=n_test, seed=seed)


def _field_spans(day: dt.date, w: _Writer) -> tuple[str, list[tuple[str, int, int]]] | None:
    """The source ``w`` writes for ``day``, built field by field, with each field's
    ``(letter, start, end)``; None where the pieces do not add up to the whole."""
    text, spans = "", []
    for kind, value in tokenize_pattern(w.pattern):
        if kind == "chars":
            text += value
            continue
        letter, count = value
        piece = format_date(day, letter * count, locale=w.babel_locale)
        spans.append((letter, len(text), len(text) + len(piece)))
        text += piece
    return (text, spans) if text == format_date(day, w.pattern, locale=w.babel_locale) else None


#: ISO target positions of each field: year 0-3, month 5-6, day 8-9
_ISO_FIELDS = {"y": range(0, 4), "M": range(5, 7), "L": range(5, 7), "d": range(8, 10)}


def gold_alignment(
    source: str, target: str, locales=DEFAULT_LOCALES, formats=DEFAULT_FORMATS
) -> Alignment | None:
    """Gold links of one pair (see :mod:`attnkit.data.tasks.alignment`), or None where no
    locale/format in ``locales``/``formats`` writes ``target`` as ``source``.

    Each ISO digit is named by its field in the source: a numeric field digit by digit,
    right-aligned (``4`` -> the ``4`` of ``-04``; the ``0`` before it and the century of a
    two-digit year are named by the whole field), a month name as a whole. Weekday names and
    the ISO ``-`` are left unlinked.
    """
    try:
        day = dt.date.fromisoformat(target)
    except ValueError:
        return None
    for writers in _make_writers(locales, formats, two_digit_years=True):
        for w in writers:
            found = _field_spans(day, w)
            if found is None or found[0] != source:
                continue
            links = set()
            for letter, start, end in found[1]:
                outputs = _ISO_FIELDS.get(letter)
                if outputs is None:
                    continue
                field = source[start:end]
                for k, j in enumerate(reversed(outputs)):  # right-aligned digit copies
                    i = end - 1 - k
                    if field.isdigit() and i >= start and source[i] == target[j]:
                        links.add((j, i))
                    else:
                        links.update((j, p) for p in range(start, end))
            return Alignment.from_possible(links)
    return None
