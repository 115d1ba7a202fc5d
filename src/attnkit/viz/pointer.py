"""A pointer network's answer drawn: the points and the order chosen, beside the attention that
chose them (a pure function: arrays in, a matplotlib figure out).

The left panel draws the inputs (sort: the values along a line; hull and TSP: the points in the
plane, numbered) and the output as a path (closed for hull and TSP); the right panel is the
attention heatmap of :func:`attnkit.viz.heatmap.plot_heatmap`, one row per output step and one
column per slot (``end`` first, then the inputs): the row's argmax is the choice.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
from matplotlib.figure import Figure

from attnkit.viz.heatmap import plot_heatmap


def slot_labels(n: int) -> list[str]:
    """The columns of a pointer heatmap: ``end``, then the inputs ``0`` .. ``n-1``."""
    return ["end", *map(str, range(n))]


def step_labels(order: list[int], steps: int) -> list[str]:
    """The rows: each step's choice (``end`` for the step that stopped)."""
    return ([str(i) for i in order] + ["end"])[:steps]


def draw_points(ax, points: np.ndarray, order: list[int], task: str) -> None:
    """The inputs and the chosen order as a path, into ``ax``."""
    pts = np.asarray(points, dtype=np.float64)
    if pts.shape[1] == 1:  # values: place them on a line at height 0, the order on a staircase
        xs = pts[:, 0]
        ax.scatter(xs, np.zeros_like(xs), color="#3b528b", zorder=3)
        ax.plot(xs[order], np.linspace(0.1, 1.0, len(order)), "-o", color="#d95f02", ms=3)
        for i, x in enumerate(xs):
            ax.annotate(str(i), (x, 0), textcoords="offset points", xytext=(0, -12), ha="center")
        ax.set_yticks([])
        ax.set_title("values and the order chosen")
        return
    ax.scatter(pts[:, 0], pts[:, 1], color="#3b528b", zorder=3)
    for i, (x, y) in enumerate(pts):
        ax.annotate(str(i), (x, y), textcoords="offset points", xytext=(4, 4), fontsize=8)
    if order:
        path = pts[order + order[:1]] if task in ("hull", "tsp") else pts[order]
        ax.plot(path[:, 0], path[:, 1], "-", color="#d95f02", lw=1.5)
        ax.scatter(*pts[order[0]], s=90, facecolors="none", edgecolors="#d95f02", zorder=4)
    ax.set_aspect("equal")
    ax.set_title({"hull": "convex hull chosen", "tsp": "tour chosen"}.get(task, "order chosen"))


def plot_solution(
    points: np.ndarray,
    order: list[int],
    attention: np.ndarray,
    task: str,
    path: str | Path | None = None,
) -> Figure:
    """Points and chosen order (left) beside the attention (T, n + 1) (right); saved to ``path``
    (.png, .svg, .pdf) when given."""
    n = len(points)
    fig = Figure(figsize=(11, 4.8), layout="constrained")
    left, right = fig.subplots(1, 2, width_ratios=(1, 1.2))
    draw_points(left, points, order, task)
    rows = step_labels(order, len(attention))
    plot_heatmap(np.asarray(attention), slot_labels(n), rows, ax=right, title="pointer attention")
    if path is not None:
        fig.savefig(path)
    return fig
