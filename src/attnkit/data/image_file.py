"""A user's picture (PNG or JPEG) as the input a vision model was trained on.

The training images are ``uint8 (H, W)`` grey, white strokes on a black background, of one size
per task (28x28 MNIST, 60x60 translated / cluttered, the strips' canvas); the model divides them
by 255. :func:`read_image` turns a file into that: checked (size on disk, a PNG or JPEG that
decodes, its sides), flattened onto white where it is transparent, made grey, inverted when its
border is light (a dark digit on paper), scaled to fit the model's size keeping its aspect
ratio, and centred on black.
"""

from __future__ import annotations

import io
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from PIL import Image, UnidentifiedImageError

from attnkit.errors import DataError

FORMATS = ("PNG", "JPEG")
MAX_BYTES = 20 * 1024 * 1024  # a digit needs far less; refuses a wrong file before decoding it
MIN_SIDE, MAX_SIDE = 8, 4096  # pixels


@dataclass
class ModelImage:
    """A file converted to a model's input: ``pixels`` uint8 (H, W), white on black."""

    pixels: np.ndarray
    original_size: tuple[int, int]  # (width, height) of the file's picture
    inverted: bool  # dark strokes on a light background were turned around


def read_image(path: str | Path, shape: tuple[int, int]) -> ModelImage:
    """The PNG or JPEG at ``path`` as a ``shape = (H, W)`` input; DataError naming the file."""
    path = Path(path)
    if not path.is_file():
        raise DataError("no such image file (give a PNG or JPEG, or a test-image index)", path=path)
    size = path.stat().st_size
    if size > MAX_BYTES:
        raise DataError(f"{size:,} bytes: an image file may hold at most {MAX_BYTES:,}", path=path)
    return _convert(path, shape, path, MAX_SIDE)


def image_from_bytes(
    data: bytes, shape: tuple[int, int], name: str = "upload", max_side: int = MAX_SIDE
) -> ModelImage:
    """PNG or JPEG bytes (an upload) as a ``shape = (H, W)`` input, with the checks of
    :func:`read_image` and sides of at most ``max_side``; DataError naming ``name``."""
    if len(data) > MAX_BYTES:
        raise DataError(f"{len(data):,} bytes: an image may hold at most {MAX_BYTES:,}", path=name)
    return _convert(io.BytesIO(data), shape, name, max_side)


def rgb_from_bytes(
    data: bytes, name: str = "upload", max_side: int = MAX_SIDE, min_side: int = 1
) -> Image.Image:
    """PNG or JPEG bytes (an upload) as an RGB PIL image, its transparent parts white, with the
    checks of :func:`image_from_bytes` (bytes, format, sides of ``min_side`` to ``max_side``,
    read from the header before anything is decoded); DataError naming ``name``."""
    if len(data) > MAX_BYTES:
        raise DataError(f"{len(data):,} bytes: an image may hold at most {MAX_BYTES:,}", path=name)
    return _decoded(io.BytesIO(data), name, max_side, min_side, _flatten_to_rgb)


def _decoded(source, name, max_side: int, min_side: int, decode):
    """``decode(image)`` of the PNG or JPEG at ``source`` (a path or a binary stream) once its
    header says it is one, of sides ``min_side`` to ``max_side``; DataError naming ``name``."""
    try:
        with Image.open(source) as opened:  # reads the header only
            if opened.format not in FORMATS:
                raise DataError(f"a {opened.format} image: give a PNG or JPEG", path=name)
            width, height = opened.size
            if not (min_side <= min(width, height) and max(width, height) <= max_side):
                raise DataError(
                    f"{width}x{height} pixels: each side must be {min_side} to {max_side}",
                    path=name,
                )
            return decode(opened)
    except (UnidentifiedImageError, Image.DecompressionBombError):
        raise DataError("not an image Pillow can read: give a PNG or JPEG", path=name) from None
    except (OSError, SyntaxError, ValueError) as exc:  # truncated or corrupt data
        raise DataError(f"cannot decode the image ({exc})", path=name) from None


def _convert(source, shape: tuple[int, int], name, max_side: int) -> ModelImage:
    """Open (a path or a binary stream), check, decode, make grey, invert and fit."""
    grey = _decoded(source, name, max_side, MIN_SIDE, _flatten_to_grey)
    height, width = grey.shape
    inverted = _light_border(grey)
    if inverted:
        grey = 255 - grey
    return ModelImage(_fit(grey, shape), (width, height), inverted)


def _flatten_to_grey(image: Image.Image) -> np.ndarray:
    """uint8 (h, w) grey of ``image``, its transparent parts white (as paper)."""
    if image.mode in ("RGBA", "LA", "PA") or "transparency" in image.info:
        image = _flatten_to_rgb(image)
    return np.asarray(image.convert("L"), dtype=np.uint8)


def _flatten_to_rgb(image: Image.Image) -> Image.Image:
    """An RGB copy of ``image``, its transparent parts white."""
    if image.mode in ("RGBA", "LA", "PA") or "transparency" in image.info:
        rgba = image.convert("RGBA")
        paper = Image.new("RGBA", rgba.size, (255, 255, 255, 255))
        return Image.alpha_composite(paper, rgba).convert("RGB")
    return image.convert("RGB")


def _light_border(grey: np.ndarray) -> bool:
    """Whether the outermost pixels are mostly light: a dark figure on a light ground."""
    border = np.concatenate([grey[0], grey[-1], grey[:, 0], grey[:, -1]])
    return float(np.median(border)) > 127


def _fit(grey: np.ndarray, shape: tuple[int, int]) -> np.ndarray:
    """``grey`` scaled to fit ``shape`` (H, W) keeping its aspect ratio, centred on black."""
    height, width = shape
    h, w = grey.shape
    scale = min(height / h, width / w)
    new_h, new_w = max(1, round(h * scale)), max(1, round(w * scale))
    resized = Image.fromarray(grey).resize((new_w, new_h), Image.LANCZOS)
    canvas = np.zeros((height, width), dtype=np.uint8)
    top, left = (height - new_h) // 2, (width - new_w) // 2
    canvas[top : top + new_h, left : left + new_w] = np.asarray(resized, dtype=np.uint8)
    return canvas
