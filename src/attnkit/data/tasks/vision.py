"""Image tasks built from digit images: translated, cluttered, multi-digit strips.

Every generator takes a pool of digit images ``uint8 (N, h, w)`` (MNIST:
28x28) with their labels and a ``seed``; the same inputs and seed give the
same output, byte for byte. Pieces are combined with ``np.maximum`` (white
strokes on black), so clutter never erases the digit.

* :func:`translated` -- each digit placed at a uniformly random position on a
  ``size x size`` black canvas (Mnih et al. 2014: 60x60). One image per digit.
* :func:`cluttered` -- as translated, plus ``pieces`` random ``piece x piece``
  crops of *other* random digits of the pool at random positions (Mnih et al.
  2014: 60x60 with 4 pieces of 8x8, 100x100 with 8).
* :func:`strips` -- ``count`` images, each 1..5 random digits side by side,
  left to right, with random horizontal and vertical jitter, on a canvas wide
  enough for ``max_digits``; shorter strings sit at a random horizontal
  offset. The label is the digit string, e.g. ``"4071"``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

Seed = int | Sequence[int]
"""Anything :func:`numpy.random.default_rng` accepts as entropy: an int or a list of ints."""


def _check_pool(images: np.ndarray, labels: np.ndarray) -> None:
    if images.ndim != 3 or images.dtype != np.uint8:
        raise ValueError(f"digit images must be uint8 (N, h, w), got {images.dtype} {images.shape}")
    if len(images) != len(labels) or len(images) == 0:
        raise ValueError(f"need a non-empty pool with one label per image, got {len(images)} and {len(labels)}")


def _paste_max(canvas: np.ndarray, which: np.ndarray, pieces: np.ndarray, tops: np.ndarray, lefts: np.ndarray) -> None:
    """For each i: ``canvas[which[i]]`` at ``(tops[i], lefts[i])`` becomes the max of itself and ``pieces[i]``.

    Vectorised by grouping equal offsets: pieces are first shifted into
    full-width bands (one slice assignment per distinct left offset), then
    the bands are maxed into the canvas (one per distinct top offset).
    ``which`` must not repeat an image within a call; pieces must fit.
    """
    if len(which) == 0:
        return
    h, w = pieces.shape[1:]
    bands = np.zeros((len(which), h, canvas.shape[2]), dtype=canvas.dtype)  # (m, h, W)
    for left in np.unique(lefts):
        sel = np.flatnonzero(lefts == left)
        bands[sel, :, left : left + w] = pieces[sel]
    for top in np.unique(tops):
        sel = np.flatnonzero(tops == top)
        rows = canvas[which[sel], top : top + h, :]
        canvas[which[sel], top : top + h, :] = np.maximum(rows, bands[sel])


def _crops(images: np.ndarray, which: np.ndarray, tops: np.ndarray, lefts: np.ndarray, size: int) -> np.ndarray:
    """``images[which[i], tops[i]:+size, lefts[i]:+size]`` for all i: ``(m, size, size)``."""
    rows = (tops[:, None] + np.arange(size))[:, :, None]
    cols = (lefts[:, None] + np.arange(size))[:, None, :]
    return images[which[:, None, None], rows, cols]


def translated(images: np.ndarray, labels: np.ndarray, size: int = 60, seed: Seed = 0) -> tuple[np.ndarray, np.ndarray]:
    """Each digit at a random position on a ``size x size`` canvas: ``(N, size, size)``, labels ``(N,)``."""
    _check_pool(images, labels)
    n, h, w = images.shape
    if size < max(h, w):
        raise ValueError(f"canvas {size} is smaller than the digits ({h}x{w})")
    rng = np.random.default_rng(seed)
    tops = rng.integers(0, size - h + 1, size=n)
    lefts = rng.integers(0, size - w + 1, size=n)
    canvas = np.zeros((n, size, size), dtype=np.uint8)
    _paste_max(canvas, np.arange(n), images, tops, lefts)
    return canvas, np.asarray(labels).copy()


def cluttered(
    images: np.ndarray,
    labels: np.ndarray,
    size: int = 60,
    pieces: int = 4,
    piece: int = 8,
    seed: Seed = 0,
) -> tuple[np.ndarray, np.ndarray]:
    """Translated digits plus ``pieces`` crops (``piece x piece``) of other digits: ``(N, size, size)``."""
    _check_pool(images, labels)
    n, h, w = images.shape
    if size < max(h, w) or piece > min(h, w, size):
        raise ValueError(f"canvas {size} / piece {piece} do not fit digits of {h}x{w}")
    rng = np.random.default_rng(seed)
    tops = rng.integers(0, size - h + 1, size=n)
    lefts = rng.integers(0, size - w + 1, size=n)
    # clutter: source digit (never the image's own digit), crop corner, paste corner
    others = rng.integers(0, max(n - 1, 1), size=(n, pieces))
    if n > 1:
        others += others >= np.arange(n)[:, None]  # skip the image's own index
    crop_y = rng.integers(0, h - piece + 1, size=(n, pieces))
    crop_x = rng.integers(0, w - piece + 1, size=(n, pieces))
    paste_y = rng.integers(0, size - piece + 1, size=(n, pieces))
    paste_x = rng.integers(0, size - piece + 1, size=(n, pieces))
    canvas = np.zeros((n, size, size), dtype=np.uint8)
    every = np.arange(n)
    for k in range(pieces):
        crops = _crops(images, others[:, k], crop_y[:, k], crop_x[:, k], piece)  # (N, piece, piece)
        _paste_max(canvas, every, crops, paste_y[:, k], paste_x[:, k])
    _paste_max(canvas, every, images, tops, lefts)
    return canvas, np.asarray(labels).copy()


@dataclass(frozen=True)
class StripLayout:
    """Geometry of multi-digit strips.

    ``spacing``: pixels from one digit's left edge to the next (MNIST digits
    are ~20 px wide inside their 28 px box, so 22 keeps them apart);
    ``jitter``: each digit moves up to this many pixels left or right, and
    up to ``2 * jitter`` down; the canvas is ``digit + 2 * jitter`` high and
    wide enough for ``max_digits`` digits.
    """

    min_digits: int = 1
    max_digits: int = 5
    spacing: int = 22
    jitter: int = 2

    def canvas(self, digit_h: int = 28, digit_w: int = 28) -> tuple[int, int]:
        """``(height, width)`` of every strip."""
        height = digit_h + 2 * self.jitter
        width = (self.max_digits - 1) * self.spacing + digit_w + 2 * self.jitter
        return height, width

    def validate(self) -> None:
        if not 1 <= self.min_digits <= self.max_digits:
            raise ValueError(f"need 1 <= min_digits <= max_digits, got {self.min_digits}, {self.max_digits}")
        if self.spacing < 1 or self.jitter < 0:
            raise ValueError(f"spacing must be >= 1 and jitter >= 0, got {self.spacing}, {self.jitter}")


def strips(
    images: np.ndarray,
    labels: np.ndarray,
    count: int,
    layout: StripLayout = StripLayout(),
    seed: Seed = 0,
) -> tuple[np.ndarray, list[str]]:
    """``count`` strips ``uint8 (count, H, W)`` of 1..5 random pool digits and their digit strings."""
    _check_pool(images, labels)
    layout.validate()
    n, h, w = images.shape
    height, width = layout.canvas(h, w)
    j, most = layout.jitter, layout.max_digits
    rng = np.random.default_rng(seed)
    lengths = rng.integers(layout.min_digits, most + 1, size=count)
    picks = rng.integers(0, n, size=(count, most))
    dx = rng.integers(-j, j + 1, size=(count, most))
    dy = rng.integers(0, 2 * j + 1, size=(count, most))
    # free room to the right of a string of L digits, spent on a random left offset
    slack = (most - lengths) * layout.spacing
    start = j + np.floor(rng.random(count) * (slack + 1)).astype(np.int64)
    canvas = np.zeros((count, height, width), dtype=np.uint8)
    for k in range(most):
        which = np.flatnonzero(lengths > k)  # strips that have a k-th digit
        lefts = start[which] + k * layout.spacing + dx[which, k]
        _paste_max(canvas, which, images[picks[which, k]], dy[which, k], lefts)
    chars = np.asarray(labels)[picks].astype(str)  # (count, max_digits)
    strings = ["".join(chars[i, : lengths[i]]) for i in range(count)]
    return canvas, strings



@dataclass(frozen=True)
class TaskSpec:
    """Which images to make from a digit pool: the task and its geometry."""

    task: str = "mnist"  # one of TASKS
    canvas: int = 60  # translated / cluttered: canvas side in pixels
    pieces: int = 4  # cluttered: clutter pieces per image
    piece: int = 8  # cluttered: clutter piece side in pixels
    layout: StripLayout = StripLayout()  # strips: geometry


_GENERATORS = {
    "mnist": lambda x, y, n, spec, seed: (x, np.asarray(y)),
    "translated": lambda x, y, n, spec, seed: translated(x, y, spec.canvas, seed),
    "cluttered": lambda x, y, n, spec, seed: cluttered(x, y, spec.canvas, spec.pieces, spec.piece, seed),
    "strips": lambda x, y, n, spec, seed: strips(x, y, n, spec.layout, seed),
}

TASKS = tuple(_GENERATORS)
"""Task names a config can ask for (``data.task``)."""


def generate(spec: TaskSpec, images: np.ndarray, labels: np.ndarray, count: int, seed: Seed):
    """Images and labels of ``spec.task`` from a digit pool.

    ``mnist`` returns the pool itself; ``translated`` / ``cluttered`` one
    ``canvas x canvas`` image per digit of the pool; ``strips`` ``count``
    strips (labels: digit strings).
    """
    try:
        generator = _GENERATORS[spec.task]
    except KeyError:
        raise ValueError(f"unknown task {spec.task!r}; valid: {', '.join(TASKS)}") from None
    return generator(images, labels, count, spec, seed)
