"""The names a report's metrics table gives its rows: words a person reads, not dict keys.

A metrics mapping is nested (``{"greedy": {"exact_match": 99.25}}``); each leaf becomes one row
named by :func:`row_name` (``exact match (greedy)``) and shown by :func:`shown_value` (``99.25%``
where the number is a percentage). Bookkeeping keys (:data:`HIDDEN`: the checkpoint's path, the
direction of the metric, the backend line) are left out of the table.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

#: keys -> their names in a report
NAMES = {
    "exact_match": "exact match",
    "bleu": "BLEU",
    "chrf": "chrF",
    "wer": "word error rate",
    "cer": "character error rate",
    "per": "phone error rate",
    "accuracy": "accuracy",
    "error": "error",
    "items": "items scored",
    "examples": "examples",
    "aer": "alignment error rate vs gold links",
    "argmax_in_span": "top source token in a gold link",
    "linked_steps": "output steps with gold links",
    "entropy_nats": "attention entropy (nats)",
    "entropy_normalised": "attention entropy (0 sharp .. 1 flat)",
    "unattended_pct": "source tokens never attended",
    "coverage_deviation": "coverage deviation",
    "decode_s": "decoding time (s)",
    "inputs_per_s": "inputs decoded per second",
    "train_minutes": "training time (min)",
    "updates": "updates",
    "own_output": "on its own output",
    "teacher_forced": "on the reference (teacher-forced)",
    "greedy": "greedy",
    "dev": "dev",
    "test": "test",
    "task": "task",
    "split": "split",
    "metric": "metric",
    "attention": "attention",
}
#: keys whose values are percentages
PERCENT = {
    "exact_match",
    "wer",
    "cer",
    "per",
    "accuracy",
    "error",
    "aer",
    "argmax_in_span",
    "unattended_pct",
}
#: keys the table leaves out: bookkeeping, not results
HIDDEN = {"higher_is_better", "backend", "model", "out", "stopped_by_safety_cap"}


def name_of(key: str) -> str:
    """One key's name: its entry in :data:`NAMES`, ``beam5`` -> ``beam 5``, else its words."""
    if key in NAMES:
        return NAMES[key]
    beam = re.fullmatch(r"beam(\d+)", key)
    if beam:
        return f"beam {beam.group(1)}"
    return key.replace("_", " ")


def row_name(path: Sequence[str]) -> str:
    """The name of the row at ``path`` (outer keys first): the leaf's name, the outer keys'
    names after it in parentheses (``("greedy", "exact_match")`` -> ``exact match (greedy)``)."""
    *outer, leaf = path
    where = ", ".join(name_of(k) for k in outer)
    return name_of(leaf) + (f" ({where})" if where else "")


def hidden(path: Sequence[str]) -> bool:
    return any(key in HIDDEN for key in path)


def shown_value(path: Sequence[str], text: str) -> str:
    """``text`` (a formatted value) with a ``%`` where the leaf is a percentage."""
    return f"{text}%" if path and path[-1] in PERCENT else text
