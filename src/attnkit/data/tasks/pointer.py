"""The pointer network's generated tasks, each with its exact solutions (Vinyals et al. 2015).

* ``sort``: n numbers drawn uniformly from [0, 1) -> the indices that put them in ascending order.
* ``hull``: n points drawn uniformly from the unit square -> the indices of their convex hull,
  counter-clockwise from the point of lowest index (Andrew's monotone chain).
* ``tsp``: n points -> the shortest closed tour (Held-Karp, exact, batched over instances), from
  point 0, in the direction whose second point has the lower index. Held-Karp takes 2^n n^2
  steps, so instances of more than :data:`TSP_MAX_POINTS` points are refused in one line.

An instance is a float array ``(n, d)`` (d = 1 for sort, 2 otherwise); its solution a list of
0-based indices. Targets are written for a decoder that points at n + 1 slots, slot 0 meaning
*end* and slot i + 1 input i: ``solution + 1`` followed by 0. A point set with two equal points
has no single answer and is refused (:func:`check_points`).

Shapes: N instances, n points, d coordinates, L target length (the longest solution + 1).
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import numpy as np

from attnkit.errors import ConfigError, InputError

TASKS = ("sort", "hull", "tsp")
#: Held-Karp keeps 2^n x n partial tours per instance: n = 12 is 49,152 of them
TSP_MAX_POINTS = 12
#: the target slot that ends an output (slot i + 1 is input i)
END = 0
#: points of one instance, anywhere (``solve``, ``plot``, a config's ``data.points``): the
#: decoder's n steps over n + 1 slots cost n^2, and the paper's longest instances have 500
MAX_POINTS = 1_000
#: instances of one split, and instances x points of one split (its float64 draws: 800 MB)
MAX_INSTANCES, MAX_SPLIT_CELLS = 10_000_000, 100_000_000


@dataclass
class PointerData:
    """The ``data:`` section of a pointer experiment (``family: pointer``)."""

    task: str = "sort"  # sort | hull | tsp
    points: int = 10  # n, the inputs of every instance
    train_size: int = 100000  # instances drawn for training (a fresh draw per seed)
    dev_size: int = 1000  # instances drawn for the dev score (best checkpoint, early stopping)
    test_size: int = 1000  # instances drawn for `attnkit evaluate --split test`
    seed: int = 0  # the draws of the three splits follow this seed

    CHOICES = {"task": TASKS}

    def validate(self, where: str) -> None:
        if self.points > MAX_POINTS:
            raise ConfigError(f"{where}.points: {self.points:,} is above the cap of {MAX_POINTS:,}")
        for name in ("train_size", "dev_size", "test_size"):
            size = getattr(self, name)
            if size < 1:
                raise ConfigError(f"{where}.{name}: must be at least 1, got {size}")
            if size > MAX_INSTANCES or size * self.points > MAX_SPLIT_CELLS:
                raise ConfigError(
                    f"{where}.{name}: {size:,} instances of {self.points} points is above the "
                    f"caps ({MAX_INSTANCES:,} instances, {MAX_SPLIT_CELLS:,} points a split)"
                )
        low = 3 if self.task == "hull" else 2
        if self.points < low:
            raise ConfigError(
                f"{where}.points: {self.task} needs at least {low}, got {self.points}"
            )
        if self.task == "tsp":
            check_tsp_size(self.points, f"{where}.points")

    @property
    def dims(self) -> int:
        """Coordinates per input: 1 for sort, 2 for points in the plane."""
        return 1 if self.task == "sort" else 2

    @property
    def permutation(self) -> bool:
        """Whether every input is chosen exactly once (sort, tsp) rather than some (hull)."""
        return self.task != "hull"


def check_tsp_size(n: int, name: str) -> None:
    """ConfigError when Held-Karp cannot solve ``n`` points in reasonable time and memory."""
    if n > TSP_MAX_POINTS:
        raise ConfigError(
            f"{name}: {n} points is beyond the exact TSP solver (Held-Karp, 2^n n^2 steps): at "
            f"most {TSP_MAX_POINTS}"
        )


def check_points(points: np.ndarray, name: str = "points") -> np.ndarray:
    """A float array (n, d) of finite, distinct points, at most :data:`MAX_POINTS` of them (counted
    before anything is converted), or InputError naming ``name``."""
    if hasattr(points, "__len__") and len(points) > MAX_POINTS:
        raise InputError(
            f"{name}: {len(points):,} points, above the cap of {MAX_POINTS:,} per instance", name
        )
    try:
        arr = np.asarray(points, dtype=np.float64)
    except (TypeError, ValueError):  # a dict, None inside a point, a ragged list
        raise InputError(f"{name}: give a list of points, each one or more numbers", name) from None
    if arr.ndim == 1:
        arr = arr[:, None]
    if arr.ndim != 2 or arr.shape[0] < 1:
        raise InputError(f"{name}: expected a list of points, got shape {arr.shape}", name)
    if not np.isfinite(arr).all():
        raise InputError(f"{name}: every coordinate must be a finite number", name)
    _, first, counts = np.unique(arr, axis=0, return_index=True, return_counts=True)
    if (counts > 1).any():
        dup = arr[first[counts > 1][0]].tolist()
        raise InputError(
            f"{name}: duplicate point {dup}; a point set with equal points has no single answer",
            name,
        )
    return arr


# ---- exact solutions --------------------------------------------------------------------------
def sort_order(values: np.ndarray) -> list[int]:
    """Indices of ``values`` (n,) or (n, 1) in ascending order."""
    return np.argsort(np.asarray(values).reshape(-1), kind="stable").tolist()


def _cross(o, a, b) -> float:
    return (a[0] - o[0]) * (b[1] - o[1]) - (a[1] - o[1]) * (b[0] - o[0])


def convex_hull(points: np.ndarray) -> list[int]:
    """Indices of the convex hull of ``points`` (n, 2), counter-clockwise from the hull point of
    lowest index; collinear boundary points are left out (Andrew's monotone chain)."""
    pts = np.asarray(points, dtype=np.float64)
    order = sorted(range(len(pts)), key=lambda i: (pts[i, 0], pts[i, 1]))
    if len(order) < 3:
        return sorted(order)
    lower: list[int] = []
    for i in order:
        while len(lower) >= 2 and _cross(pts[lower[-2]], pts[lower[-1]], pts[i]) <= 0:
            lower.pop()
        lower.append(i)
    upper: list[int] = []
    for i in reversed(order):
        while len(upper) >= 2 and _cross(pts[upper[-2]], pts[upper[-1]], pts[i]) <= 0:
            upper.pop()
        upper.append(i)
    hull = lower[:-1] + upper[:-1]  # counter-clockwise
    start = hull.index(min(hull))
    return hull[start:] + hull[:start]


def polygon_area(points: np.ndarray, order: list[int]) -> float:
    """The area enclosed by ``points[order]`` taken as a polygon (shoelace; 0 below 3 points)."""
    if len(order) < 3:
        return 0.0
    p = np.asarray(points, dtype=np.float64)[order]
    x, y = p[:, 0], p[:, 1]
    return float(abs(np.dot(x, np.roll(y, -1)) - np.dot(y, np.roll(x, -1))) / 2)


def tour_length(points: np.ndarray, order: list[int]) -> float:
    """The length of the closed tour visiting ``points[order]`` and returning to the first."""
    p = np.asarray(points, dtype=np.float64)[order]
    return float(np.linalg.norm(p - np.roll(p, -1, axis=0), axis=1).sum())


def canonical_tour(order: list[int]) -> list[int]:
    """The same closed tour from point 0, in the direction whose second point is the lower."""
    start = order.index(0)
    tour = order[start:] + order[:start]
    if len(tour) > 2 and tour[-1] < tour[1]:
        tour = [tour[0]] + tour[1:][::-1]
    return tour


def held_karp(batch: np.ndarray) -> list[list[int]]:
    """Optimal closed tours of instances ``batch`` (N, n, 2), each canonical
    (:func:`canonical_tour`); dynamic programming over subsets, vectorised over instances."""
    batch = np.asarray(batch, dtype=np.float64)
    count, n = batch.shape[:2]
    check_tsp_size(n, "points")
    if n <= 3:
        return [canonical_tour(list(range(n))) for _ in range(count)]
    dist = np.linalg.norm(batch[:, :, None, :] - batch[:, None, :, :], axis=-1)  # (N, n, n)
    full = 1 << (n - 1)  # subsets of points 1..n-1; bit j-1 is point j
    cost = np.full((count, full, n), np.inf)
    parent = np.zeros((count, full, n), dtype=np.int8)
    for j in range(1, n):
        cost[:, 1 << (j - 1), j] = dist[:, 0, j]
    rows = np.arange(count)
    for subset in range(1, full):
        members = [j for j in range(1, n) if subset >> (j - 1) & 1]
        if len(members) < 2:
            continue
        for j in members:
            rest = subset ^ (1 << (j - 1))
            before = [k for k in members if k != j]
            options = cost[:, rest, before] + dist[:, before, j]  # (N, |before|)
            best = options.argmin(1)
            cost[:, subset, j] = options[rows, best]
            parent[:, subset, j] = np.asarray(before)[best]
    closing = cost[:, full - 1, 1:] + dist[:, 1:, 0]  # (N, n - 1)
    last = closing.argmin(1) + 1
    tours = []
    for i in range(count):
        tour, subset, j = [], full - 1, int(last[i])
        while j:
            tour.append(j)
            subset, j = subset ^ (1 << (j - 1)), int(parent[i, subset, j])
        tours.append(canonical_tour([0] + tour[::-1]))
    return tours


def brute_force_tour(points: np.ndarray) -> list[int]:
    """The optimal tour by trying every permutation (for tests; n <= 8)."""
    n = len(points)
    best = min(
        ([0, *rest] for rest in itertools.permutations(range(1, n))),
        key=lambda order: tour_length(points, order),
    )
    return canonical_tour(best)


def solve(task: str, points: np.ndarray) -> list[int]:
    """The exact solution of one instance (n, d)."""
    if task == "sort":
        return sort_order(points)
    if task == "hull":
        return convex_hull(points)
    return held_karp(np.asarray(points)[None])[0]


# ---- splits -----------------------------------------------------------------------------------
@dataclass
class PointerSplit:
    """Instances (N, n, d) float32, their solutions, and the decoder targets (N, L) int64 (slot
    indices: i + 1 for input i, then :data:`END`, then -1 as padding)."""

    inputs: np.ndarray
    solutions: list[list[int]]
    targets: np.ndarray

    def __len__(self) -> int:
        return len(self.solutions)


def targets_of(solutions: list[list[int]]) -> np.ndarray:
    """(N, L): ``solution + 1``, then END, padded with -1 to the longest."""
    length = max(len(s) for s in solutions) + 1
    out = np.full((len(solutions), length), -1, dtype=np.int64)
    for i, s in enumerate(solutions):
        out[i, : len(s)] = np.asarray(s) + 1
        out[i, len(s)] = END
    return out


def make_split(cfg: PointerData, split: str) -> PointerSplit:
    """Draw split ``train``/``dev``/``test`` (disjoint seeds) and solve every instance."""
    size = {"train": cfg.train_size, "dev": cfg.dev_size, "test": cfg.test_size}[split]
    offset = {"train": 0, "dev": 1, "test": 2}[split]
    rng = np.random.default_rng([cfg.seed, offset])
    inputs = rng.random((size, cfg.points, cfg.dims)).astype(np.float32)
    if cfg.task == "tsp":
        solutions = []
        for start in range(0, size, 4096):
            solutions += held_karp(inputs[start : start + 4096])
    else:
        solutions = [solve(cfg.task, x) for x in inputs]
    return PointerSplit(inputs, solutions, targets_of(solutions))
