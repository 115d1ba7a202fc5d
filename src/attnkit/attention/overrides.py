"""Opt-in overrides: faster implementations that may stand in for a plain torch function.

attnkit's reference is plain torch: :mod:`attnkit.attention` and :mod:`attnkit.models` compute
everything with torch operations. :mod:`attnkit.accel` registers faster implementations here,
each under a name, and the plain function asks :func:`lookup` for one before computing. An
override is handed out only inside :func:`allowing` (the scope that a backend allowing kernels
opens around a model's call, :meth:`attnkit.accel.backend.Backend.scope`): outside such a scope,
and under the ``reference`` backend, nothing but torch runs. The C kernels of
:mod:`attnkit.accel.native` read the same switch (:func:`kernels_allowed`).

Registered names and what an override must compute (shapes as in :mod:`attnkit.attention.scores`):

* ``additive_scores(query_proj (B, T, A), keys_proj (B, S, A), v (A,))`` -> scores (B, T, S), or
  None where it declines (torch then computes them);
* ``keep_mask(shape, p, like)`` -> an inverted-dropout mask of ``shape`` (0 with probability p,
  else 1 / (1 - p)) in ``like``'s dtype and device;
* ``dropout(x, p, training)`` -> what ``F.dropout(x, p, training)`` computes, with masks drawn
  its own way.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterator

#: the names an override may be registered under (see the module docstring)
NAMES = ("additive_scores", "keep_mask", "dropout")

_registry: dict[str, Callable] = {}


class _Here(threading.local):
    """This thread's switch: allowed inside a scope allowing kernels, vetoed inside
    :func:`switched_off`."""

    allowed = False
    vetoed = False


_here = _Here()


def register(name: str, implementation: Callable) -> None:
    """Make ``implementation`` the override of ``name`` (one of :data:`NAMES`)."""
    if name not in NAMES:
        raise ValueError(f"no overridable function {name!r}; valid: {', '.join(NAMES)}")
    _registry[name] = implementation


def kernels_allowed() -> bool:
    """Whether overrides and kernels may run here, in this thread: inside ``allowing(True)`` and
    not inside :func:`switched_off`."""
    return _here.allowed and not _here.vetoed


def lookup(name: str) -> Callable | None:
    """The override registered for ``name`` where :func:`kernels_allowed`, else None (compute
    with torch)."""
    return _registry.get(name) if _here.allowed and not _here.vetoed else None


class allowing:  # noqa: N801 - used as a function: ``with allowing(): ...``
    """Inside this block (in this thread) overrides and kernels may run (``allowed``) or may not;
    an inner block decides for itself, as each model's backend does for its own calls. (A class,
    not a generator: models enter one per decoding step.)"""

    __slots__ = ("_allowed", "_before")

    def __init__(self, allowed: bool = True):
        self._allowed = allowed

    def __enter__(self) -> None:
        self._before = _here.allowed
        _here.allowed = self._allowed

    def __exit__(self, *exc) -> None:
        _here.allowed = self._before


@contextlib.contextmanager
def switched_off() -> Iterator[None]:
    """Inside this block (in this thread) no override or kernel runs, whatever a model's backend
    allows: for side-by-side comparisons and tests."""
    before = _here.vetoed
    _here.vetoed = True
    try:
        yield
    finally:
        _here.vetoed = before
