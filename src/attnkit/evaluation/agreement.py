"""How far two maps of the same outputs agree (attention and saliency, say): the share of rows
whose maxima fall on the same position, and the mean Spearman correlation of their rows.

Shapes: each map (T, S), a row per output step over S source positions.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np


def argmax_agreement(pairs: Sequence[tuple[np.ndarray, np.ndarray]]) -> float:
    """Percent of output rows where two (T, S) maps put their maximum on the same source token."""
    same = total = 0
    for a, b in pairs:
        same += int((np.asarray(a).argmax(1) == np.asarray(b).argmax(1)).sum())
        total += len(a)
    return round(100.0 * same / max(1, total), 2)


def _ranks(x: np.ndarray) -> np.ndarray:
    """Ranks of ``x`` from 0, tied values sharing their mean rank."""
    order = x.argsort(kind="stable")
    ranks = np.empty(len(x))
    ranks[order] = np.arange(len(x))
    _, tie_group = np.unique(x, return_inverse=True)
    return (np.bincount(tie_group, weights=ranks) / np.bincount(tie_group))[tie_group]


def rank_correlation(pairs: Sequence[tuple[np.ndarray, np.ndarray]]) -> float | None:
    """Mean over output rows of the Spearman correlation of two (T, S) maps' rows (rows where
    either map is constant have no correlation and are left out); None when no row has one."""
    values = []
    for a, b in pairs:
        for row_a, row_b in zip(np.asarray(a, float), np.asarray(b, float)):
            ra, rb = _ranks(row_a), _ranks(row_b)
            if ra.std() > 0 and rb.std() > 0:
                values.append(float(np.corrcoef(ra, rb)[0, 1]))
    return round(float(np.mean(values)), 4) if values else None
