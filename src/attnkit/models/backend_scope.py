"""What the vision models share with the seq2seq ones about the backend: one attribute, set by
``set_backend``, whose scope (:meth:`attnkit.accel.backend.Backend.scope`) every call computes in.

So ``reference`` is plain torch for them too (the additive-score kernel of
:class:`attnkit.attention.spatial.SpatialAttention` declines), and a backend allowing kernels lets
the overrides of :mod:`attnkit.accel.overrides` run.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import TypeVar

import torch

from attnkit.accel.backend import DEFAULT, Backend

Method = TypeVar("Method", bound=Callable)


class BackendScoped:
    """Mixin for an ``nn.Module``: :attr:`backend` (the CPU's default until set) and its setter;
    methods decorated with :func:`in_backend_scope` compute inside its scope."""

    backend: Backend = DEFAULT

    def set_backend(self, backend: Backend) -> None:
        """Compute with ``backend`` (see :func:`attnkit.accel.backend.resolve`) from now on."""
        self.backend = backend

    def describe_backend(self, backend: Backend) -> str:
        """One line for the training log."""
        return backend.describe()


def in_backend_scope(method: Method) -> Method:
    """Run ``method`` inside ``self.backend.scope()``. While torch.compile traces, the scope is
    left out (the kernels decline there anyway, and no override is allowed outside a scope)."""

    @functools.wraps(method)
    def scoped(self, *args, **kwargs):
        if torch.compiler.is_compiling():
            return method(self, *args, **kwargs)
        with self.backend.scope():
            return method(self, *args, **kwargs)

    return scoped
