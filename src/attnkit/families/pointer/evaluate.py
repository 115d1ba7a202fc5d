"""Scores of a pointer network's outputs against the exact solutions of its task.

* every task: ``exact_match`` (% of instances whose output is the solution; tours compared as
  closed tours, in either direction, from any start; hulls as cycles from any start);
* ``sort``: ``position_accuracy`` (% of output positions holding the right input);
* ``hull``: ``area_coverage`` (mean area of the output polygon over the true hull's, %, where the
  output is a simple polygon of at least 3 points; an invalid one counts 0), ``invalid_pct``
  (outputs that are not a simple polygon), ``point_recall`` and ``point_precision`` (% of hull
  points output, % of output points on the hull);
* ``tsp``: ``tour_length`` (mean, closed), ``optimal_length`` (mean, Held-Karp) and
  ``optimality_gap_pct`` (100 (mean tour / mean optimum - 1)).
"""

from __future__ import annotations

import numpy as np
import torch

from attnkit.data.tasks.pointer import (
    PointerSplit,
    canonical_tour,
    polygon_area,
    tour_length,
)
from attnkit.decoding.pointer import beam_pointer


def _cycle_from_lowest(order: list[int]) -> list[int]:
    if not order:
        return order
    start = order.index(min(order))
    return order[start:] + order[:start]


def same_answer(task: str, output: list[int], solution: list[int]) -> bool:
    """Whether ``output`` is ``solution`` up to what the task leaves free."""
    if task == "tsp":
        return len(output) == len(solution) and canonical_tour(output) == canonical_tour(solution)
    if task == "hull":
        return _cycle_from_lowest(output) == _cycle_from_lowest(solution)
    return output == solution


def _segments_cross(p1, p2, p3, p4) -> bool:
    """Whether segments p1p2 and p3p4 cross at a point interior to both."""

    def orient(a, b, c):
        return np.sign((b[0] - a[0]) * (c[1] - a[1]) - (b[1] - a[1]) * (c[0] - a[0]))

    return (
        orient(p1, p2, p3) * orient(p1, p2, p4) < 0 and orient(p3, p4, p1) * orient(p3, p4, p2) < 0
    )


def simple_polygon(points: np.ndarray, order: list[int]) -> bool:
    """At least 3 distinct points whose closed polygon crosses itself nowhere."""
    if len(order) < 3 or len(set(order)) != len(order):
        return False
    p = np.asarray(points, dtype=np.float64)[order]
    m = len(order)
    for i in range(m):
        for j in range(i + 2, m):
            if i == 0 and j == m - 1:
                continue  # neighbours through the closing edge
            if _segments_cross(p[i], p[(i + 1) % m], p[j], p[(j + 1) % m]):
                return False
    return True


def score_outputs(task: str, split: PointerSplit, outputs: list[list[int]]) -> dict:
    """The task's figures (see the module docstring) of ``outputs`` on ``split``."""
    n = len(outputs)
    exact = sum(same_answer(task, o, s) for o, s in zip(outputs, split.solutions, strict=True))
    scores: dict = {"items": n, "exact_match": round(100 * exact / n, 2)}
    if task == "sort":
        right = sum(
            sum(a == b for a, b in zip(o, s, strict=False))
            for o, s in zip(outputs, split.solutions, strict=True)
        )
        total = sum(len(s) for s in split.solutions)
        scores["position_accuracy"] = round(100 * right / total, 2)
    elif task == "hull":
        scores.update(_hull_scores(split, outputs))
    else:
        lengths = [tour_length(x, o) for x, o in zip(split.inputs, outputs, strict=True)]
        optimal = [tour_length(x, s) for x, s in zip(split.inputs, split.solutions, strict=True)]
        scores["tour_length"] = round(float(np.mean(lengths)), 4)
        scores["optimal_length"] = round(float(np.mean(optimal)), 4)
        gap = 100 * (np.mean(lengths) / np.mean(optimal) - 1)
        scores["optimality_gap_pct"] = round(float(gap), 3)
    return scores


def _hull_scores(split: PointerSplit, outputs: list[list[int]]) -> dict:
    coverage, invalid, found, output_points, hull_points, on_hull = [], 0, 0, 0, 0, 0
    for x, o, s in zip(split.inputs, outputs, split.solutions, strict=True):
        truth = set(s)
        found += len(truth & set(o))
        on_hull += sum(i in truth for i in o)
        output_points += len(o)
        hull_points += len(truth)
        if simple_polygon(x, o):
            coverage.append(polygon_area(x, o) / max(polygon_area(x, s), 1e-12))
        else:
            invalid += 1
            coverage.append(0.0)
    return {
        "area_coverage": round(100 * float(np.mean(coverage)), 2),
        "invalid_pct": round(100 * invalid / len(outputs), 2),
        "point_recall": round(100 * found / max(hull_points, 1), 2),
        "point_precision": round(100 * on_hull / max(output_points, 1), 2),
    }


#: the figure that decides which checkpoint is best, and whether higher is better
DECIDING = {
    "sort": ("exact_match", True),
    "hull": ("exact_match", True),
    "tsp": ("tour_length", False),
}


def decode_split(model, split: PointerSplit, beam: int = 1, batch_size: int = 1000) -> list:
    """Every instance of ``split`` decoded (greedy, or beam search of width ``beam``):
    :class:`attnkit.decoding.pointer.Pointed` each."""
    device = next(model.parameters()).device
    model.eval()
    out = []
    for start in range(0, len(split), batch_size):
        inputs = torch.as_tensor(split.inputs[start : start + batch_size], device=device)
        out += beam_pointer(model, inputs, beam)
    return out


def dev_figures(model, split: PointerSplit, data, count: int = 2):
    """(tag, figure) of the first ``count`` instances of ``split``, decoded greedily: the points
    and the order chosen beside the attention (made lazily, for TensorBoard)."""
    from attnkit.viz.pointer import plot_solution

    first = PointerSplit(split.inputs[:count], split.solutions[:count], split.targets[:count])
    for i, found in enumerate(decode_split(model, first)):
        yield (
            f"pointer/{i}",
            plot_solution(split.inputs[i], found.order, found.attention, data.task),
        )


def dev_scorer(model, split: PointerSplit, data) -> dict:
    """The greedy scores of ``split``, with the deciding ``metric`` and ``higher_is_better``:
    what :func:`attnkit.families.pointer.train.train_pointer` is handed."""
    outputs = [p.order for p in decode_split(model, split)]
    metric, higher = DECIDING[data.task]
    return {
        **score_outputs(data.task, split, outputs),
        "metric": metric,
        "higher_is_better": higher,
    }
