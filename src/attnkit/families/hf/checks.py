"""The pretrained models' argument checks: what :class:`~attnkit.families.hf.model.PretrainedModel`
calls on what a user passes, with the shared helpers of :mod:`attnkit.families.arguments` (one
InputError naming the argument, the same bounds as every family's API). An input is named as the
server names it: ``text`` (``text[2]`` in a list) or ``image`` for ``classify``, ``encode`` and
``explain``; ``prompts`` and ``texts`` for ``generate`` and ``translate``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from attnkit.errors import InputError
from attnkit.families import arguments as check


def _one_text(value: Any, name: str) -> str:
    text = check.text(value, name)
    if not text.strip():
        raise InputError(f"{name}: give a non-blank string", name)
    return text


def texts(value: Any, name: str) -> None:
    """A non-blank string, or a list (or tuple) of them (an item at fault named ``name[i]``)."""
    if isinstance(value, str):
        _one_text(value, name)
        return
    for i, item in enumerate(check.texts(value, name)):
        _one_text(item, f"{name}[{i}]")


def _image(value: Any, name: str) -> None:
    from PIL import Image

    if not isinstance(value, str | Path | bytes | np.ndarray | Image.Image):
        raise InputError(
            f"{name}: give an image file, its bytes (a PNG or JPEG), a PIL image or an array "
            f"(H, W) or (H, W, C), not {'None' if value is None else type(value).__name__}",
            name,
        )


def inputs(model, value: Any) -> None:
    """What ``classify``, ``encode`` and ``explain`` take: one input or a list of them, each a
    text (``text``) or, for a model that reads images, an image (``image``)."""
    if not model.takes_images:
        texts(value, "text")
        return
    if isinstance(value, list | tuple):
        for i, item in enumerate(value):
            _image(item, f"image[{i}]")
    else:
        _image(value, "image")


def writing(max_new_tokens: Any, beam: Any, optional: bool = False) -> None:
    """``generate``'s and ``translate``'s settings: 1..MAX_NEW_TOKENS tokens (None allowed
    where ``optional``), a beam of 1..MAX_BEAM."""
    if not (optional and max_new_tokens is None):
        check.integer(max_new_tokens, "max_new_tokens", 1, check.MAX_NEW_TOKENS)
    check.integer(beam, "beam", 1, check.MAX_BEAM)


def explaining(model, value: Any, method: Any, steps: Any, words: Any) -> str:
    """``explain``'s arguments; the method with ``-`` read as ``_``."""
    from attnkit.explain.saliency import METHODS  # imports captum: only when explaining

    method = check.choice(check.text(method, "method").replace("-", "_"), "method", METHODS)
    check.integer(steps, "steps", 1, check.MAX_IG_STEPS)
    check.flag(words, "words")
    inputs(model, value)
    return method


def questioning(values: Any, data: Any, count: Any, out: Any, options: dict) -> None:
    """``faithfulness``'s arguments: the texts or a data file, ``count`` >= 1, the output
    directory (or None) and the options of :class:`~attnkit.evaluation.faithfulness.Options`."""
    if values is not None:
        texts(values, "texts")
    if data is not None:
        check.path(data, "data")
    if out is not None:
        check.path(out, "out")
    check.integer(count, "count", 1)
    check.integer(options["permutations"], "permutations", 0)
    check.integer(options["adversarial_steps"], "adversarial_steps", 0)
    check.integer(options["ig_steps"], "ig_steps", 1, check.MAX_IG_STEPS)
    check.integer(options["seed"], "seed")


def aligning(gold: Any, layer: Any, count: Any) -> None:
    """``alignment_error``'s arguments: a path, a layer and a count from 1 (or None)."""
    check.path(gold, "gold")
    check.optional_integer(layer, "layer", 1)
    check.optional_integer(count, "count", 1)


def summarizing(model, part: Any, period: Any, seed: Any) -> None:
    """``head_summary``'s arguments: a part the model has (an encoder-decoder's ``encoder`` or
    ``decoder``; ``self``), a period from 1 (or None), a seed."""
    if part is not None:
        pair = getattr(model.model.config, "is_encoder_decoder", False)
        check.choice(part, "part", ("encoder", "decoder") if pair else ("self",))
    check.optional_integer(period, "period", 1)
    check.integer(seed, "seed")
