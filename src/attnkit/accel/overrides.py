"""Registers accel's faster implementations as the overrides of the plain torch functions
(:mod:`attnkit.attention.overrides`); the package :mod:`attnkit.accel` imports it, so that every
backend scope allowing kernels finds them registered.

=====================  ===================================================================
``additive_scores``    :func:`attnkit.accel.kernel_scores.additive_scores` (C kernel)
``keep_mask``          :func:`attnkit.accel.dropout.keep_mask` (integer bits, C kernel)
``dropout``            :func:`attnkit.accel.dropout.dropout`
=====================  ===================================================================
"""

from __future__ import annotations

from attnkit.accel import dropout, kernel_scores
from attnkit.attention import overrides


def register() -> None:
    """Register every override (again: idempotent)."""
    overrides.register("additive_scores", kernel_scores.additive_scores)
    overrides.register("keep_mask", dropout.keep_mask)
    overrides.register("dropout", dropout.dropout)


register()
