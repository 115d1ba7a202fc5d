"""A lesson's checks say what they measured: ``assert check("name", value, ">=", bound)``
prints one line (``check  name: value >= bound  ok``) and returns whether it holds, so a failing
check shows its value and ``benchmarks/lessons.py`` records every measured value beside its
threshold (:func:`parse_checks` reads them back from a notebook's output)."""

from __future__ import annotations

import operator
import re

#: the comparisons a check may make
OPERATORS = {">=": operator.ge, ">": operator.gt, "<=": operator.le, "<": operator.lt}
PREFIX = "check  "
_LINE = re.compile(
    r"^check  (?P<name>.+): (?P<value>\S+) (?P<op>>=|>|<=|<) (?P<bound>\S+)  (ok|FAILS)$"
)


def check(name: str, value: float, op: str, threshold: float, digits: int = 4) -> bool:
    """Print ``check  name: value op threshold  ok`` (or ``FAILS``) and return whether
    ``value op threshold`` holds; ``op`` is one of :data:`OPERATORS`."""
    if op not in OPERATORS:
        raise ValueError(f"op: {op!r} is not one of {', '.join(OPERATORS)}")
    value = float(value)
    holds = bool(OPERATORS[op](value, threshold))
    print(
        f"{PREFIX}{name}: {round(value, digits):g} {op} {threshold:g}  {'ok' if holds else 'FAILS'}"
    )
    return holds


def parse_checks(text: str) -> list[dict]:
    """Every check line in ``text`` -> ``{"check", "value", "op", "threshold", "holds"}``."""
    rows = []
    for line in text.splitlines():
        m = _LINE.match(line.strip("\n"))
        if m:
            rows.append(
                {
                    "check": m["name"],
                    "value": float(m["value"]),
                    "op": m["op"],
                    "threshold": float(m["bound"]),
                    "holds": line.endswith("ok"),
                }
            )
    return rows
