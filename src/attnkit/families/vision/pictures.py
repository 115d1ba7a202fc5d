"""``attnkit plot`` of a vision checkpoint: where the model looks on one image.

:func:`plot_vision` draws a model's own attention (overlays per step, or its glimpse path) on test
image N or an image file; :func:`plot_input` reads that image, for these pictures and for
:func:`attnkit.families.vision.explain.plot_explained` (``--explain``) alike.
"""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import torch

from attnkit.data.image_file import read_image
from attnkit.data.tasks.vision import VisionData
from attnkit.errors import ConfigError
from attnkit.families.vision.bundle import load_vision_model
from attnkit.families.vision.config import VisionConfig
from attnkit.viz.visual import picture_paths


def plot_vision(model_dir: Path, image: int | str | Path, out: str | Path) -> list[Path]:
    """Draw where the model looks on one image: test image ``image`` (an int, or a string of
    one), or a PNG / JPEG file (:func:`attnkit.data.image_file.read_image`).

    ``out`` is a file -- ``.png`` or ``.svg``: the steps side by side; ``.gif``: one frame per
    step -- or a directory (a string ending in a separator, or one that exists) that gets both
    ``<type>-<name>.png`` and ``.gif``, ``<name>`` being ``test<N>`` or the image file's stem.
    Returns the written paths.
    """
    cfg, kind, model = load_vision_model(model_dir, "cpu")
    pixels, label, name = plot_input(cfg, image)
    paths = picture_paths(out, f"{cfg.model_type}-{name}")
    torch.manual_seed(0)
    return kind.picture(model, pixels, label, paths, cfg.model)


def plot_input(cfg: VisionConfig, image: int | str | Path) -> tuple[np.ndarray, object, str]:
    """(uint8 (H, W) pixels, label or None, name) of test image N or of an image file (what
    ``plot`` draws, with or without ``--explain``)."""
    index = image if isinstance(image, int) else _as_index(str(image))
    if index is None:
        picture = read_image(image, cfg.data.image_shape())
        if picture.inverted:
            warnings.warn(
                f"{image}: a light background, inverted to white strokes on black as in "
                "the training images",
                stacklevel=3,
            )
        return picture.pixels, None, Path(image).stem
    test = VisionData(cfg.data).split("test")
    if not 0 <= index < len(test.images):
        raise ConfigError(f"--image {index}: the test split has images 0..{len(test.images) - 1}")
    return test.images[index], test.labels[index], f"test{index}"


def _as_index(text: str) -> int | None:
    """``text`` as a test-image index, or None for a file name (write ./5 for a file named 5)."""
    try:
        return int(text)
    except ValueError:
        return None
