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

For experiments, :class:`DataConfig` (the ``data:`` section of a vision
config) and :class:`VisionData` turn MNIST into train / dev / test splits:
dev digits are held out of the MNIST training set, test images are made from
MNIST test digits only, and training images can be redrawn every epoch.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from attnkit.data import mnist
from attnkit.data.location import dataset_dir
from attnkit.errors import ConfigError

Seed = int | Sequence[int]
"""Anything :func:`numpy.random.default_rng` accepts as entropy: an int or a list of ints."""


def _check_pool(images: np.ndarray, labels: np.ndarray) -> None:
    if images.ndim != 3 or images.dtype != np.uint8:
        raise ValueError(f"digit images must be uint8 (N, h, w), got {images.dtype} {images.shape}")
    if len(images) != len(labels) or len(images) == 0:
        raise ValueError(
            f"need a non-empty pool with one label per image, got {len(images)} and {len(labels)}"
        )


def _paste_max(
    canvas: np.ndarray, which: np.ndarray, pieces: np.ndarray, tops: np.ndarray, lefts: np.ndarray
) -> None:
    """For each i: ``canvas[which[i]]`` at ``(tops[i], lefts[i])`` becomes the max of itself and
    ``pieces[i]``.

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


def _crops(
    images: np.ndarray, which: np.ndarray, tops: np.ndarray, lefts: np.ndarray, size: int
) -> np.ndarray:
    """``images[which[i], tops[i]:+size, lefts[i]:+size]`` for all i: ``(m, size, size)``."""
    rows = (tops[:, None] + np.arange(size))[:, :, None]
    cols = (lefts[:, None] + np.arange(size))[:, None, :]
    return images[which[:, None, None], rows, cols]


def translated(
    images: np.ndarray, labels: np.ndarray, size: int = 60, seed: Seed = 0
) -> tuple[np.ndarray, np.ndarray]:
    """Each digit at a random position on a ``size x size`` canvas: ``(N, size, size)``, labels
    ``(N,)``."""
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
    """Translated digits plus ``pieces`` crops (``piece x piece``) of other digits:
    ``(N, size, size)``."""
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
            raise ValueError(
                f"need 1 <= min_digits <= max_digits, got {self.min_digits}, {self.max_digits}"
            )
        if self.spacing < 1 or self.jitter < 0:
            raise ValueError(
                f"spacing must be >= 1 and jitter >= 0, got {self.spacing}, {self.jitter}"
            )


def strips(
    images: np.ndarray,
    labels: np.ndarray,
    count: int,
    layout: StripLayout = StripLayout(),
    seed: Seed = 0,
) -> tuple[np.ndarray, list[str]]:
    """``count`` strips ``uint8 (count, H, W)`` of 1..5 random pool digits and their digit
    strings."""
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
    "cluttered": lambda x, y, n, spec, seed: cluttered(
        x, y, spec.canvas, spec.pieces, spec.piece, seed
    ),
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


# ---------------------------------------------------------------- experiment data


@dataclass
class DataConfig:
    """``data:`` which images to learn from and where the digits are."""

    task: str = "mnist"
    """mnist (28x28 digits), translated, cluttered, or strips (multi-digit strings)."""
    directory: str | None = None
    """Folder with the MNIST IDX files (.gz or not); null: $ATTNKIT_DATA_DIR/mnist, else the user
    cache (:mod:`attnkit.data.location`)."""
    download: bool = False
    """Fetch missing MNIST files from the public home (needs internet), checked by md5 (the
    shipped configs set it)."""
    verify: bool = True
    """Check the md5 of the MNIST files' content before reading them."""
    canvas: int = 60
    """translated / cluttered: side of the square canvas in pixels (the paper: 60, or 100 for
    cluttered)."""
    clutter_pieces: int = 4
    """cluttered: random crops of other digits per image (the paper: 4 on 60x60, 8 on 100x100)."""
    clutter_size: int = 8
    """cluttered: side of each clutter crop in pixels."""
    min_digits: int = 1
    """strips: fewest digits in a strip."""
    max_digits: int = 5
    """strips: most digits in a strip (the canvas is wide enough for this many)."""
    digit_spacing: int = 22
    """strips: pixels from one digit's left edge to the next."""
    jitter: int = 2
    """strips: random shift of each digit, up to this many pixels sideways and twice that
    downwards."""
    train_size: int | None = None
    """Training images per epoch; null: every training digit left after the dev split
    (strips: 50000)."""
    dev_size: int = 5000
    """Training digits held out as the dev split (early stopping); for strips, also the number of
    dev strips."""
    test_size: int | None = None
    """Test images; null: all 10000 test digits (strips: 10000 strips of test digits)."""
    resample: bool = True
    """Redraw the training images (positions, clutter, strips) every epoch: more data for free."""
    seed: int = 0
    """Seed of the dev split and of the generated training images."""
    test_seed: int = 2014
    """Seed of the generated test images (keep it fixed to compare runs)."""

    CHOICES = {"task": TASKS}

    def validate(self, where: str) -> None:
        for name in ("canvas", "clutter_size", "min_digits", "digit_spacing"):
            if getattr(self, name) < 1:
                raise ConfigError(f"{where}.{name}: must be >= 1, got {getattr(self, name)}")
        if self.task in ("translated", "cluttered") and self.canvas < 28:
            raise ConfigError(f"{where}.canvas: {self.canvas} is smaller than an MNIST digit (28)")
        if not self.min_digits <= self.max_digits:
            raise ConfigError(
                f"{where}.max_digits: must be >= min_digits ({self.min_digits}), got "
                f"{self.max_digits}"
            )
        if self.dev_size < 1 or self.dev_size >= mnist.SIZES["train"]:
            raise ConfigError(
                f"{where}.dev_size: must be between 1 and {mnist.SIZES['train'] - 1}, got "
                f"{self.dev_size}"
            )

    def image_shape(self) -> tuple[int, int]:
        """``(H, W)`` of every image of the task (what a model trained on it reads)."""
        if self.task == "mnist":
            return mnist.SIDE, mnist.SIDE
        if self.task == "strips":
            return self.spec().layout.canvas(mnist.SIDE, mnist.SIDE)
        return self.canvas, self.canvas

    def spec(self) -> TaskSpec:
        layout = StripLayout(self.min_digits, self.max_digits, self.digit_spacing, self.jitter)
        return TaskSpec(self.task, self.canvas, self.clutter_pieces, self.clutter_size, layout)


@dataclass
class Split:
    """Images ``uint8 (N, H, W)`` and labels (class ``int64 (N,)`` or digit strings)."""

    images: np.ndarray
    labels: np.ndarray | list[str]


def data_directory(directory: str | None) -> Path:
    """``data.directory``, else ``$ATTNKIT_DATA_DIR/mnist``, else the user cache's ``mnist``."""
    return dataset_dir("mnist", directory)


class VisionData:
    """The train / dev / test images of a :class:`DataConfig`, MNIST read lazily.

    Dev digits are a seeded random subset of the MNIST training set (never
    seen in training); test images are made from the MNIST test digits only.
    """

    def __init__(self, cfg: DataConfig):
        self.cfg = cfg
        self.spec = cfg.spec()
        self._pools: dict[str, tuple[np.ndarray, np.ndarray]] = {}

    def _load(self, split: str) -> tuple[np.ndarray, np.ndarray]:
        return mnist.load(
            data_directory(self.cfg.directory), split, self.cfg.verify, self.cfg.download
        )

    def pool(self, name: str) -> tuple[np.ndarray, np.ndarray]:
        """Digit pool ``(images, labels)`` of "train", "dev" or "test"."""
        if name not in self._pools:
            if name == "test":
                x, y = self._load("test")
                n = self.cfg.test_size if self.cfg.task != "strips" else None
                self._pools["test"] = (x[:n], y[:n])
            else:
                x, y = self._load("train")
                order = np.random.default_rng([self.cfg.seed, 7]).permutation(len(x))
                dev, train = order[: self.cfg.dev_size], order[self.cfg.dev_size :]
                if self.cfg.task != "strips" and self.cfg.train_size:
                    train = train[: self.cfg.train_size]
                self._pools["dev"], self._pools["train"] = (x[dev], y[dev]), (x[train], y[train])
        return self._pools[name]

    def _count(self, name: str) -> int:
        return {
            "train": self.cfg.train_size or 50000,
            "dev": self.cfg.dev_size,
            "test": self.cfg.test_size or mnist.SIZES["test"],
        }[name]

    def train_split(self, epoch: int) -> Split:
        """Training images of ``epoch`` (the same every epoch unless ``resample``)."""
        x, y = self.pool("train")
        seed = [self.cfg.seed, 0, epoch if self.cfg.resample else 0]
        return Split(*generate(self.spec, x, y, self._count("train"), seed))

    def split(self, name: str) -> Split:
        """The fixed "dev" or "test" split."""
        x, y = self.pool(name)
        seed = [self.cfg.seed, 1] if name == "dev" else [self.cfg.test_seed, 2]
        return Split(*generate(self.spec, x, y, self._count(name), seed))

    def describe(self) -> str:
        c = self.cfg
        what = {
            "mnist": "28x28 MNIST",
            "translated": f"{c.canvas}x{c.canvas} translated MNIST",
            "cluttered": f"{c.canvas}x{c.canvas} cluttered MNIST ({c.clutter_pieces} pieces of "
            f"{c.clutter_size}x{c.clutter_size})",
            "strips": f"{c.min_digits}-{c.max_digits} digit strips",
        }[c.task]
        return f"{what}, {len(self.pool('train')[0])} training digits, {c.dev_size} dev"
