"""A pretrained model's inputs: texts through its tokenizer (checked against the most positions
it holds), images through its image processor (a file, a PIL image or an array), and the labels
of an image's patches."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from attnkit.errors import AttnkitError, InputError

#: a tokenizer's ``model_max_length`` above this means "no limit given"
NO_LIMIT = 1_000_000


def max_positions(model, tokenizer) -> tuple[int | None, str]:
    """The most token positions the model holds and where that figure comes from (the config's
    ``max_position_embeddings``, or the tokenizer's ``model_max_length``); (None, "") for a model
    with no such limit (T5's relative positions)."""
    found: list[tuple[int, str]] = []
    config_limit = getattr(model.config, "max_position_embeddings", None)
    if isinstance(config_limit, int) and config_limit > 0:
        found.append((config_limit, "max_position_embeddings"))
    tokenizer_limit = getattr(tokenizer, "model_max_length", None)
    if isinstance(tokenizer_limit, int) and 0 < tokenizer_limit < NO_LIMIT:
        found.append((tokenizer_limit, "the tokenizer's model_max_length"))
    return min(found) if found else (None, "")


def check_length(count: int, model, tokenizer, label: str, what: str = "the input") -> None:
    """One line when ``count`` positions are more than the model holds."""
    limit, where = max_positions(model, tokenizer)
    if limit is not None and count > limit:
        raise InputError(
            f"{what} is {count} tokens; {label} holds at most {limit} ({where}): shorten it",
            "input",
        )


def one_text(text: Any, name: str = "text") -> str:
    if not isinstance(text, str) or not text.strip():
        raise InputError(f"{name}: give a non-blank string", name)
    return text


def encode_text(tokenizer, model, text: str, label: str, extra: int = 0):
    """The BatchEncoding (PyTorch tensors, a batch of one) of ``text``, with ``extra`` positions
    still to come (tokens to generate) counted against the model's limit."""
    encoding = tokenizer(one_text(text), return_tensors="pt")
    count = encoding["input_ids"].shape[1]
    if count == 0:
        raise InputError("text: the tokenizer made no tokens of it", "text")
    what = "the input" if not extra else f"the prompt ({count} tokens) with {extra} to generate"
    check_length(count + extra, model, tokenizer, label, what)
    return encoding


def read_image(image: Any):
    """A PIL image, an array (H, W) or (H, W, C) with values in 0..255 (or 0..1 floats), the
    path of an image file, or a PNG or JPEG file's bytes (an upload: bounded as every upload is,
    :func:`attnkit.data.image_file.rgb_from_bytes`) -> an RGB PIL image."""
    from PIL import Image, UnidentifiedImageError

    if isinstance(image, bytes):
        from attnkit.data.image_file import rgb_from_bytes
        from attnkit.errors import DataError

        try:
            return rgb_from_bytes(image, "image")
        except DataError as exc:
            raise InputError(str(exc), "image") from None
    if isinstance(image, (str, Path)):
        path = Path(image)
        if not path.is_file():
            raise InputError(f"image: no such file: {path}", "image")
        try:
            with Image.open(path) as opened:
                return opened.convert("RGB")
        except (UnidentifiedImageError, OSError) as exc:
            raise InputError(f"image: {path} is not an image file ({exc})", "image") from None
    if isinstance(image, Image.Image):
        return image.convert("RGB")
    array = np.asarray(image)
    if array.ndim not in (2, 3) or array.size == 0:
        raise InputError(f"image: an array (H, W) or (H, W, C), not {array.shape}", "image")
    if array.dtype.kind == "f":
        array = np.clip(array * (255.0 if array.max() <= 1.0 else 1.0), 0, 255)
    return Image.fromarray(array.astype(np.uint8)).convert("RGB")


def encode_image(processor, image: Any):
    """(pixel values (1, C, H, W), the image's size in words, the picture resized to the model's
    H x W: uint8 (H, W, 3), what its patches cover) of ``image``."""
    picture = read_image(image)
    pixels = processor(images=picture, return_tensors="pt")["pixel_values"]
    height, width = pixels.shape[-2:]
    seen = np.asarray(picture.resize((int(width), int(height))), dtype=np.uint8)
    return pixels, f"an image of {picture.width}x{picture.height}", seen


def patch_grid(model, count: int) -> tuple[int, int, int] | None:
    """(rows, columns, the first patch's position) of an image model's ``count`` positions: its
    square grid of patches after the leading special ones ([CLS], a distillation token); None
    when its config names no ``image_size`` and ``patch_size``."""
    config = model.config
    size, patch = getattr(config, "image_size", None), getattr(config, "patch_size", None)
    if not isinstance(size, int) or not isinstance(patch, int) or patch <= 0:
        return None
    side = size // patch
    extra = count - side * side
    if extra < 0:
        raise AttnkitError(f"the model attends over {count} positions, fewer than its patches")
    return side, side, extra


def patch_labels(model, count: int) -> list[str]:
    """Labels of an image model's ``count`` positions: the leading special ones ([CLS], a
    distillation token) and each patch's grid cell, ``r0c3`` (row 0, column 3)."""
    grid = patch_grid(model, count)
    if grid is None:
        return [str(i) for i in range(count)]
    _, side, extra = grid
    leading = ["[CLS]", "[DIST]"][:extra] + [f"[{i}]" for i in range(2, extra)]
    return leading + [f"r{i // side}c{i % side}" for i in range(side * side)]
