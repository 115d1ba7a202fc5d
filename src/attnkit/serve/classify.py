"""``POST /v1/classify``: where a vision model looks on one image, step by step.

The image is a test-set image (by index) or an upload (:func:`check_upload`: a PNG or JPEG
within the server's limits, made into the model's input as ``attnkit plot --image FILE`` does).
:data:`STEPS` holds, per vision model type, the function that runs the model on it and reads
what it attended to: soft attention maps over the image's regions, or the glimpses of the
Recurrent Attention Model (centre in -1..1, the smallest patch's size in pixels).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import torch

from attnkit.errors import AttnkitError
from attnkit.serve.models import ServedModel
from attnkit.serve.problems import ApiError

DIGITS = 6


@dataclass(frozen=True)
class ClassifyKey:
    model: str


@dataclass(frozen=True)
class ClassifyJob:
    pixels: np.ndarray | None  # uint8 (H, W) of an upload, or None for a test image
    index: int | None = None


def check_upload(model: ServedModel, data: bytes, max_side: int) -> np.ndarray:
    """An upload as the model's input, uint8 (H, W); ApiError naming ``image`` otherwise."""
    from attnkit.data.image_file import image_from_bytes

    cfg = model.loaded[0]
    try:
        return image_from_bytes(data, cfg.data.image_shape(), "image", max_side).pixels
    except AttnkitError as exc:
        status = 413 if "pixels: each side" in str(exc) and "must be" in str(exc) else 422
        raise ApiError(status, "image", str(exc)) from None


def vision_model(model: ServedModel) -> tuple:
    """(config, family, model) of a vision model; ApiError 422 for a seq2seq one."""
    if model.family != "vision":
        raise ApiError(422, "model", f"model: {model.name!r} is a seq2seq model: use /v1/translate")
    return model.loaded


def run_batch(model: ServedModel, key: ClassifyKey, jobs: list[ClassifyJob]) -> list:
    """One answer per job (a dict, or the exception it raised); images run one at a time."""
    answers = []
    for job in jobs:
        try:
            answers.append(_classify(model, job))
        except Exception as exc:
            answers.append(exc)
    return answers


def _classify(model: ServedModel, job: ClassifyJob) -> dict:
    cfg, _, net = model.loaded
    pixels = job.pixels if job.pixels is not None else _test_image(model, job.index)
    device = next(net.parameters()).device
    x = torch.from_numpy(np.ascontiguousarray(pixels)).float().div(255.0)[None, None].to(device)
    torch.manual_seed(0)  # a RAM path is the policy's means: no sampling, but keep it fixed
    with torch.no_grad():
        prediction, probs, steps = STEPS[cfg.model_type](net, x)
    return {
        "model": model.name,
        "prediction": prediction,
        "probs": None if probs is None else [round(float(p), DIGITS) for p in probs],
        "image": np.round(pixels / 255.0, DIGITS).tolist(),
        "steps": steps,
    }


_TEST_IMAGES: dict[str, np.ndarray] = {}  # model name -> its test split's images (made once)


def _test_image(model: ServedModel, index: int) -> np.ndarray:
    from attnkit.data.tasks.vision import VisionData

    if model.name not in _TEST_IMAGES:
        _TEST_IMAGES[model.name] = VisionData(model.loaded[0].data).split("test").images
    images = _TEST_IMAGES[model.name]
    if not 0 <= index < len(images):
        raise ApiError(422, "index", f"index: the test split has images 0..{len(images) - 1}")
    return images[index]


def _map(weights) -> list[list[float]]:
    return np.round(np.asarray(weights, dtype=np.float64), DIGITS).tolist()


def _pooling(net, x):
    """Attention pooling: one map, the class probabilities."""
    out = net(x)
    probs = out.log_probs[0].exp().cpu()
    grid = out.weights.reshape(*out.grid).cpu()  # (h, w)
    step = {"attention": _map(grid), "glimpse": None, "token": None}
    return str(int(probs.argmax())), probs.tolist(), [step]


def _reader(net, x):
    """Show, attend and tell: one map per digit read, </s> included."""
    from attnkit.models import show_attend_tell as sat

    tokens, weights, (h, w) = net.greedy(x, 6)  # 5 digits and </s> at most
    tokens = tokens.cpu()
    steps = []
    for t, token in enumerate(tokens[0].tolist()):
        name = str(token) if token < 10 else "</s>"
        steps.append(
            {"attention": _map(weights[0, t].reshape(h, w).cpu()), "glimpse": None, "token": name}
        )
        if token == sat.EOS:
            break
    return sat.decode_tokens(tokens)[0], None, steps


def _ram(net, x):
    """The Recurrent Attention Model: its glimpses (the policy's means)."""
    out = net(x, sample=False)
    probs = out.log_probs[0].exp().cpu()
    size = float(net.sensor.sizes[0])
    steps = [
        {
            "attention": None,
            "glimpse": {"x": float(lx), "y": float(ly), "size": size},
            "token": None,
        }
        for lx, ly in out.locations[0].cpu().tolist()
    ]
    return str(int(probs.argmax())), probs.tolist(), steps


#: model.type -> run the model on (1, 1, H, W) images: (prediction, probs or None, steps)
STEPS: dict[str, Callable] = {
    "attention_pooling": _pooling,
    "show_attend_tell": _reader,
    "ram": _ram,
}
