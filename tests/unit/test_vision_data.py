"""MNIST loader and the translated / cluttered / strip generators.

The generator tests use synthetic digits, so they run without MNIST; the
loader is tested on small IDX files written here and, when present, on the
real copy in ``../shared/data/mnist``.
"""

from __future__ import annotations

import gzip
import hashlib
import os
import struct
from pathlib import Path

import numpy as np
import pytest

from attnkit.data import mnist
from attnkit.data.tasks import vision as tasks
from attnkit.errors import DataError


def mnist_dir() -> Path:
    env = os.environ.get("ATTNKIT_DATA_DIR")
    if env:
        return Path(env) / "mnist"
    return Path(__file__).resolve().parents[2].parent / "shared" / "data" / "mnist"


# ---------------------------------------------------------------- synthetic digits


def block_digits(n: int) -> tuple[np.ndarray, np.ndarray]:
    """Digit i: a solid 28x28 square of value i + 1 (unique), label i % 10."""
    images = np.repeat((np.arange(n, dtype=np.uint8) + 1)[:, None, None], 28, axis=1).repeat(
        28, axis=2
    )
    return images, np.arange(n) % 10


def bar_digits() -> tuple[np.ndarray, np.ndarray]:
    """Ten 28x28 digits, digit k: a 12-wide, 16-high block of value 20 * (k + 1) in the middle."""
    images = np.zeros((10, 28, 28), dtype=np.uint8)
    for k in range(10):
        images[k, 6:22, 8:20] = 20 * (k + 1)
    return images, np.arange(10)


def find_window(canvas: np.ndarray, piece: np.ndarray) -> list[tuple[int, int]]:
    """Top-left corners where ``canvas`` holds ``piece`` exactly."""
    windows = np.lib.stride_tricks.sliding_window_view(canvas, piece.shape)
    hits = np.argwhere((windows == piece).all(axis=(-1, -2)))
    return [tuple(map(int, h)) for h in hits]


def test_translated_places_each_digit_whole_and_is_deterministic():
    rng = np.random.default_rng(0)
    images = rng.integers(1, 256, size=(20, 28, 28), dtype=np.uint8)  # no zero pixel: unambiguous
    labels = rng.integers(0, 10, size=20)
    canvas, out_labels = tasks.translated(images, labels, size=60, seed=3)
    assert canvas.shape == (20, 60, 60) and canvas.dtype == np.uint8
    np.testing.assert_array_equal(out_labels, labels)
    for i in range(20):
        ((top, left),) = find_window(canvas[i], images[i])
        assert canvas[i].sum() == images[i].astype(np.int64).sum()  # nothing else on the canvas
    again, _ = tasks.translated(images, labels, size=60, seed=3)
    other, _ = tasks.translated(images, labels, size=60, seed=4)
    np.testing.assert_array_equal(canvas, again)
    assert not np.array_equal(canvas, other)


def test_translated_positions_cover_the_canvas():
    images, labels = block_digits(200)
    canvas, _ = tasks.translated(images, labels, size=60, seed=0)
    corners = np.array([np.argwhere(c > 0).min(axis=0) for c in canvas])
    assert corners.min() == 0 and corners.max() == 32  # every offset 0..32 is possible
    assert len(np.unique(corners[:, 1])) > 20


def own_window(canvas: np.ndarray, own: int) -> np.ndarray | None:
    """Mask of the 28x28 window that holds all pixels of value ``own`` and is ``>= own``
    throughout."""
    windows = np.lib.stride_tricks.sliding_window_view(canvas, (28, 28))
    rows, cols = np.nonzero(canvas == own)
    for top, left in np.argwhere((windows >= own).all(axis=(-1, -2))):
        inside = (rows >= top) & (rows < top + 28) & (cols >= left) & (cols < left + 28)
        if inside.all():
            mask = np.zeros(canvas.shape, dtype=bool)
            mask[top : top + 28, left : left + 28] = True
            return mask
    return None


@pytest.mark.parametrize("size,pieces", [(60, 4), (100, 8)])
def test_cluttered_adds_crops_of_other_digits(size, pieces):
    images, labels = block_digits(50)  # digit i: a solid square of value i + 1
    canvas, out_labels = tasks.cluttered(images, labels, size=size, pieces=pieces, piece=8, seed=1)
    assert canvas.shape == (50, size, size) and canvas.dtype == np.uint8
    np.testing.assert_array_equal(out_labels, labels)
    extra = []
    for i in range(50):
        mask = own_window(canvas[i], i + 1)
        assert mask is not None, "the digit must be on the canvas, whole (clutter never erases it)"
        outside = canvas[i][~mask]
        assert not (outside == i + 1).any(), "clutter must come from other digits"
        extra.append(int((outside > 0).sum()))
    # up to `pieces` 8x8 crops land outside the digit; on average a good share of them
    assert max(extra) <= pieces * 64
    assert np.mean(extra) > pieces * 64 * 0.4
    again, _ = tasks.cluttered(images, labels, size=size, pieces=pieces, piece=8, seed=1)
    np.testing.assert_array_equal(canvas, again)
    other, _ = tasks.cluttered(images, labels, size=size, pieces=pieces, piece=8, seed=2)
    assert not np.array_equal(canvas, other)


def test_strips_shapes_labels_and_determinism():
    images, labels = bar_digits()
    layout = tasks.StripLayout(min_digits=1, max_digits=5, spacing=22, jitter=2)
    canvas, strings = tasks.strips(images, labels, count=200, layout=layout, seed=7)
    height, width = layout.canvas()
    assert canvas.shape == (200, height, width) == (200, 32, 120) and canvas.dtype == np.uint8
    assert len(strings) == 200
    lengths = {len(s) for s in strings}
    assert lengths == {1, 2, 3, 4, 5}
    for strip, label in zip(canvas, strings):
        # read the strip back: column runs of nonzero pixels, left to right, value -> digit
        columns = strip.max(axis=0)
        runs, prev = [], 0
        for value in columns:
            if value and not prev:
                runs.append(int(value))
            prev = value
        assert "".join(str(v // 20 - 1) for v in runs) == label
    again, again_strings = tasks.strips(images, labels, count=200, layout=layout, seed=7)
    np.testing.assert_array_equal(canvas, again)
    assert again_strings == strings
    _, other = tasks.strips(images, labels, count=200, layout=layout, seed=8)
    assert other != strings


def test_strips_respect_digit_count_bounds():
    images, labels = bar_digits()
    layout = tasks.StripLayout(min_digits=3, max_digits=3, spacing=24, jitter=0)
    canvas, strings = tasks.strips(images, labels, count=20, layout=layout, seed=0)
    assert canvas.shape == (20, 28, 2 * 24 + 28)
    assert all(len(s) == 3 for s in strings)


def test_generate_registry():
    images, labels = bar_digits()
    spec = tasks.TaskSpec("mnist")
    x, y = tasks.generate(spec, images, labels, 0, seed=0)
    assert x is images
    x, y = tasks.generate(tasks.TaskSpec("translated", canvas=40), images, labels, 0, seed=0)
    assert x.shape == (10, 40, 40)
    with pytest.raises(ValueError, match="unknown task"):
        tasks.generate(tasks.TaskSpec("nope"), images, labels, 0, seed=0)


# ---------------------------------------------------------------- IDX loader


def write_idx(path: Path, array: np.ndarray, magic: int, compress: bool) -> str:
    data = (
        struct.pack(">I", magic)
        + struct.pack(f">{array.ndim}I", *array.shape)
        + array.astype(np.uint8).tobytes()
    )
    if compress:
        with gzip.open(path, "wb") as f:
            f.write(data)
    else:
        path.write_bytes(data)
    return hashlib.md5(data).hexdigest()


@pytest.fixture
def fake_mnist(tmp_path, monkeypatch):
    rng = np.random.default_rng(0)
    images = rng.integers(0, 256, size=(7, 28, 28), dtype=np.uint8)
    labels = rng.integers(0, 10, size=7).astype(np.uint8)
    sums = {
        "t10k-images-idx3-ubyte": write_idx(
            tmp_path / "t10k-images-idx3-ubyte.gz", images, 2051, True
        ),
        "t10k-labels-idx1-ubyte": write_idx(
            tmp_path / "t10k-labels-idx1-ubyte", labels, 2049, False
        ),
    }
    monkeypatch.setattr(mnist, "MD5_CONTENT", {**mnist.MD5_CONTENT, **sums})
    return tmp_path, images, labels


def test_load_reads_gzip_and_plain_idx(fake_mnist):
    directory, images, labels = fake_mnist
    x, y = mnist.load(directory, "test", verify=True)
    np.testing.assert_array_equal(x, images)
    np.testing.assert_array_equal(y, labels)
    assert x.dtype == np.uint8 and y.dtype == np.int64


def test_load_rejects_bad_magic_size_and_checksum(fake_mnist, tmp_path):
    directory, images, labels = fake_mnist
    write_idx(directory / "t10k-labels-idx1-ubyte", labels, 0x0BAD, False)  # wrong magic
    with pytest.raises(DataError, match="checksum"):
        mnist.load(directory, "test", verify=True)
    with pytest.raises(DataError, match="magic"):
        mnist.load(directory, "test", verify=False)
    data = struct.pack(">II", 2049, 9) + labels.tobytes()  # header says 9 labels, 7 follow
    (directory / "t10k-labels-idx1-ubyte").write_bytes(data)
    with pytest.raises(DataError, match="size mismatch"):
        mnist.load(directory, "test", verify=False)


def test_load_names_the_missing_file(tmp_path):
    with pytest.raises(DataError, match="t10k-images-idx3-ubyte"):
        mnist.load(tmp_path, "test")
    with pytest.raises(DataError, match="unknown MNIST split"):
        mnist.load(tmp_path, "validation")


def test_checksums_and_urls_are_the_canonical_ones():
    assert mnist.MD5_CONTENT["train-images-idx3-ubyte"] == "6bbc9ace898e44ae57da46a324031adb"
    assert len(mnist.BASE_URLS) >= 2 and all(u.endswith("/") for u in mnist.BASE_URLS)


@pytest.mark.skipif(
    not mnist_dir().is_dir(), reason=f"MNIST copy not found: {mnist_dir()} is missing"
)
def test_real_mnist_test_split_verifies():
    x, y = mnist.load(mnist_dir(), "test", verify=True)
    assert x.shape == (10000, 28, 28) and y.shape == (10000,)
    assert np.bincount(y).min() > 800 and x.max() == 255
