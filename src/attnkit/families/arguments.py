"""The Python API's argument checks: what every family's API object calls on what a user passes.

A server request is checked by its schema (strict types, the server's :class:`Limits`) before it
reaches an API object; a call from Python meets these checks instead, so that a wrong type, a
value that would be coerced (``1.5`` as node 1, ``None`` as the sentence "None") or a setting
past its bound is one :class:`~attnkit.errors.InputError` naming the argument, never a
``TypeError`` from deep inside or a search that runs out of memory. The bounds are the server's
defaults or, where a local user may rightly ask for more, the documented larger ones below.
"""

from __future__ import annotations

import math
import operator
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from attnkit.errors import InputError

#: the API's bounds: the widest beam (``attnkit serve --max-beam``'s default is 10) and the most
#: tokens shown per greedy step (``--max-top-k``: 20); docs/API.md lists them
MAX_BEAM = 100
MAX_TOP_K = 100
#: the most tokens a pretrained model writes for one call (``--max-new-tokens``' default is 64;
#: the model's positions bound it further)
MAX_NEW_TOKENS = 4096
#: the most points of an integrated-gradients path (a forward and a backward each)
MAX_IG_STEPS = 1000


def _kind(value) -> str:
    return "None" if value is None else type(value).__name__


def integer(value, name: str, low: int | None = None, high: int | None = None) -> int:
    """``value`` as an int within ``low``..``high`` (either end open when None): an int or a
    numpy integer, never a bool, a float (1.5 is not 1) or a string ('2' is not 2)."""
    if isinstance(value, bool):
        raise InputError(f"{name}: give an integer, not {value!r}", name)
    try:
        number = operator.index(value)
    except TypeError:
        raise InputError(f"{name}: give an integer, not {_kind(value)} {value!r}", name) from None
    if low is not None and number < low:
        raise InputError(f"{name} must be at least {low}, got {number}", name)
    if high is not None and number > high:
        raise InputError(f"{name} must be at most {high}, got {number}", name)
    return number


def flag(value, name: str) -> bool:
    """``value``, a bool (or a numpy bool): never 0, 1 or the string 'false'."""
    if not isinstance(value, bool | np.bool_):
        raise InputError(f"{name}: give True or False, not {_kind(value)} {value!r}", name)
    return bool(value)


def optional_integer(value, name: str, low: int | None = None, high: int | None = None):
    """None, or ``value`` as :func:`integer` takes it."""
    return None if value is None else integer(value, name, low, high)


def number(value, name: str, low: float | None = None) -> float:
    """``value`` as a finite float (an int or a float, never a bool or a string), >= ``low``."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise InputError(f"{name}: give a number, not {_kind(value)} {value!r}", name)
    if not math.isfinite(value) or (low is not None and value < low):
        bound = "finite" if low is None else f"finite and >= {low}"
        raise InputError(f"{name} must be {bound}, got {value}", name)
    return float(value)


def text(value, name: str) -> str:
    """``value``, a string."""
    if not isinstance(value, str):
        raise InputError(f"{name}: give a string, not {_kind(value)}", name)
    return value


def texts(value, name: str) -> list[str]:
    """One string or a list (or tuple) of strings as a list; an item that is no string is an
    error naming it (``texts[2]``)."""
    if isinstance(value, str):
        return [value]
    if not isinstance(value, Sequence) or isinstance(value, bytes):
        raise InputError(f"{name}: give a string or a list of strings, not {_kind(value)}", name)
    for i, item in enumerate(value):
        text(item, f"{name}[{i}]")
    return list(value)


def choice(value, name: str, valid: Sequence[str]) -> str:
    """``value``, one of ``valid`` (the message lists them)."""
    if not isinstance(value, str) or value not in valid:
        raise InputError(f"{name} {value!r}: use one of {', '.join(valid)}", name)
    return value


def path(value, name: str) -> Path:
    """A file or directory name: a string or a path, never None or a number."""
    if not isinstance(value, str | Path) or not str(value):
        raise InputError(f"{name}: give a path (a string or a Path), not {_kind(value)}", name)
    return Path(value)
