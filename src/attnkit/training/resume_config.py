"""The config a resumed run trains with: the run's own, changed only where asked and possible.

``attnkit train CONFIG --resume`` finds the run directory through CONFIG (or ``--output-dir``)
and goes on with the resolved config saved in ``RUN/last``: the ``--set`` s of the first run
need not be typed again. Values of CONFIG that differ from the run's (the first run's
``--set`` s, or edits since) leave the run's in place, and one line says which
(:func:`request`). A ``--set`` of this call that changes a key a resumed run can honour
(:data:`SEQ2SEQ`, :data:`VISION`: ``train.epochs``, ``train.max_minutes``, ``train.patience``,
...) is applied and logged as ``resume: train.epochs 10 -> 20`` (:func:`changes`); one that
changes anything else (the model, the data, the optimizer's or the schedule's settings, the
batches) is a one-line :class:`ConfigError` naming the key, both values and what to do.

Configs are compared as plain mappings (``to_dict`` of the parsed config, so that defaults are
filled in and values typed); numbers equal to rounding count as equal.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from attnkit.errors import ConfigError


@dataclass(frozen=True)
class Rules:
    """Which keys of a family's config a resumed run may change.

    A name covers its key and every key under it (``decode``: the whole section).
    """

    honoured: tuple[str, ...]  # keys a resumed run takes a new value of
    locating: tuple[str, ...]  # keys that say where the run is, not what it trains


#: how the run is computed and when it stops: not what the model, data, optimizer or batches are
_HOW_AND_WHEN = (
    "train.epochs",
    "train.max_minutes",
    "train.patience",
    "train.max_bad_updates",
    "train.clip",
    "train.device",
    "train.threads",
    "train.backend",
    "train.progress",
    "train.verbose",
    "train.tensorboard",
)
SEQ2SEQ = Rules(
    honoured=(
        *_HOW_AND_WHEN,
        "train.precision",
        "train.eval_every",
        "train.average_checkpoints",
        "decode",
    ),
    locating=("name", "output_dir"),
)
VISION = Rules(
    honoured=(
        *_HOW_AND_WHEN,
        "train.eval_batch_size",
        "train.fit_schedule_to_budget",
    ),
    locating=("output_dir",),
)
GRAPH = Rules(honoured=_HOW_AND_WHEN, locating=("output_dir",))
MEMNET = Rules(
    honoured=(*_HOW_AND_WHEN, "train.eval_batch_size"),
    locating=("output_dir",),
)
TEXT = Rules(
    honoured=(*MEMNET.honoured, "train.eval_every", "train.average_checkpoints"),
    locating=("output_dir",),
)
POINTER = Rules(
    honoured=(*_HOW_AND_WHEN, "train.eval_batch_size", "decode"), locating=("output_dir",)
)


@dataclass(frozen=True)
class Difference:
    key: str  # dotted: train.epochs
    saved: Any  # the run's value (MISSING where it has none)
    asked: Any


MISSING = object()


def differences(saved: dict, asked: dict, rules: Rules) -> list[Difference]:
    """The leaf keys whose values differ, the locating ones left out, in the order of ``saved``."""
    ours, theirs = _flatten(saved), _flatten(asked)
    found = []
    for key in [*ours, *(k for k in theirs if k not in ours)]:
        if _covered(key, rules.locating):
            continue
        a, b = ours.get(key, MISSING), theirs.get(key, MISSING)
        if not _same(a, b):
            found.append(Difference(key, a, b))
    return found


def request(
    saved: dict, asked: dict, overrides: Sequence[str], rules: Rules, last: Path, source: str
) -> tuple[dict, str | None]:
    """The config to resume with, and a line naming the values of ``source`` it leaves.

    ``saved``: the run's config; ``asked``: CONFIG with this call's ``overrides`` (``--set``
    KEY=VALUE) applied. The result is ``saved`` with the keys those overrides name taken from
    ``asked`` (each checked: one resume cannot honour is a ConfigError) and the locating keys
    from ``asked`` (the run is where this call found it).
    """
    named = set_keys(overrides)
    result = copy.deepcopy(saved)
    left = []
    for diff in differences(saved, asked, rules):
        if not _covered(diff.key, named):
            left.append(diff.key)
            continue
        _check(diff, rules, last, f"leave out --set {diff.key} to go on with the run's value")
        _put(result, diff.key, diff.asked)
    for key in rules.locating:
        if key in asked:
            result[key] = asked[key]
    if not left:
        return result, None
    return result, (
        f"resume: goes on with the config saved in {last}; {source} differs in "
        f"{', '.join(left)} (the first run's --set or edits since: the run's values are kept; "
        "--set KEY=VALUE changes what a resumed run can change)"
    )


def changes(saved: dict, asked: dict, rules: Rules, last: Path) -> list[str]:
    """``resume: KEY OLD -> NEW`` for each key ``asked`` changes; ConfigError for one that
    resume cannot honour (a caller that gives a whole config asks for every value in it)."""
    found = differences(saved, asked, rules)
    for diff in found:
        _check(diff, rules, last, f"set it back to {_show(diff.saved)}")
    return [f"resume: {d.key} {_show(d.saved)} -> {_show(d.asked)}" for d in found]


def set_keys(overrides: Sequence[str]) -> set[str]:
    """The dotted keys of ``KEY=VALUE`` overrides (as :func:`attnkit.config.apply_overrides`
    reads them)."""
    keys = set()
    for item in overrides:
        key = item.split("=", 1)[0]
        keys.add(".".join(p for p in key.strip().split(".") if p))
    return keys


def _check(diff: Difference, rules: Rules, last: Path, undo: str) -> None:
    """ConfigError when resume cannot honour ``diff``: ``undo`` says how to go on without it."""
    if _covered(diff.key, rules.honoured):
        return
    can = ", ".join(f"{k}.*" if "." not in k else k for k in rules.honoured)
    raise ConfigError(
        f"{last}: a resumed run cannot change {diff.key} ({_show(diff.saved)} in the run, "
        f"{_show(diff.asked)} asked): {undo}, or train afresh with --overwrite or another "
        f"--output-dir (resume can change {can})"
    )


def _covered(key: str, names) -> bool:
    """``key`` is one of ``names`` or under one of them (``decode.alpha`` under ``decode``)."""
    return any(key == name or key.startswith(name + ".") for name in names)


def _flatten(data: Any, prefix: str = "") -> dict[str, Any]:
    """``{"train": {"lr": 1}}`` -> ``{"train.lr": 1}``; lists and scalars are leaves."""
    if not isinstance(data, dict):
        return {prefix: data}
    flat: dict[str, Any] = {}
    for key, value in data.items():
        name = f"{prefix}.{key}" if prefix else str(key)
        if isinstance(value, dict) and value:
            flat.update(_flatten(value, name))
        else:
            flat[name] = value
    return flat


def _put(data: dict, key: str, value: Any) -> None:
    *parents, last = key.split(".")
    for part in parents:
        data = data.setdefault(part, {})
    if value is MISSING:
        data.pop(last, None)
    else:
        data[last] = value


def _same(a: Any, b: Any) -> bool:
    """Equal, numbers to rounding (a saved config of an earlier version is translated)."""
    numbers = all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in (a, b))
    if numbers:
        return a == b or math.isclose(a, b, rel_tol=1e-9, abs_tol=0.0)
    return a == b


def _show(value: Any) -> str:
    """A value as it is written in YAML and ``--set``: null, true, 3e-4, cpu, [4, 8]."""
    if value is MISSING:
        return "(none)"
    if value is None:
        return "null"
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, str):
        return value if value.strip() else repr(value)
    return str(value)
