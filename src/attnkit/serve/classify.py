"""``POST /v1/classify``: where a vision model looks on one image, step by step.

The image is a test-set image (by index) or an upload (:func:`check_upload`: a PNG or JPEG
within the server's limits, made into the model's input as ``attnkit plot --image FILE`` does).
:meth:`attnkit.api.VisionModel.classify` answers it, as in Python: the prediction, and where the
model looked from the model family's ``steps`` (:mod:`attnkit.training.vision_families`), the
same data ``report.html`` draws: soft attention maps over the image's regions, or the glimpses of
the Recurrent Attention Model (centre in -1..1, the finest patch's side in pixels).
"""

from __future__ import annotations

import io
from dataclasses import dataclass

import numpy as np

from attnkit.errors import AttnkitError
from attnkit.serve.batching import one_at_a_time
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

    size = _image_size(data, max_side)
    if size is not None and max(size) > max_side:
        raise ApiError(
            413,
            "image",
            f"image: {size[0]}x{size[1]} pixels, above the limit of {max_side} pixels a side "
            "(--max-image-side)",
        )
    cfg = model.loaded.config
    try:
        return image_from_bytes(data, cfg.data.image_shape(), "image", max_side).pixels
    except AttnkitError as exc:
        raise ApiError(422, "image", str(exc)) from None


def _image_size(data: bytes, max_side: int) -> tuple[int, int] | None:
    """(width, height) from an image's header, or None when it is no image Pillow knows."""
    from PIL import Image

    try:
        with Image.open(io.BytesIO(data)) as opened:
            return opened.size
    except Image.DecompressionBombError:  # Pillow refuses its header before we could ask
        raise ApiError(
            413,
            "image",
            f"image: more than {2 * Image.MAX_IMAGE_PIXELS:,} pixels, above the limit of "
            f"{max_side} pixels a side (--max-image-side)",
        ) from None
    except Exception:  # not an image: image_from_bytes says so, naming the field
        return None


def vision_model(model: ServedModel):
    """The :class:`attnkit.api.VisionModel` of a vision model; ApiError 422 for another."""
    if model.family != "vision":
        raise ApiError(422, "model", model.wrong_endpoint())
    return model.loaded


def run_batch(model: ServedModel, key: ClassifyKey, jobs: list[ClassifyJob]) -> list:
    """One answer per job (a dict, or the exception it raised); images run one at a time."""
    return one_at_a_time(lambda job: _classify(model, job), jobs)


def _classify(model: ServedModel, job: ClassifyJob) -> dict:
    """The API's classification (:meth:`attnkit.api.VisionModel.classify`) as the answer."""
    pixels = job.pixels if job.pixels is not None else _test_image(model, job.index)
    answer = model.loaded.classify(pixels)
    return {
        "model": model.name,
        "prediction": answer.prediction,
        "probs": None if answer.probs is None else [round(float(p), DIGITS) for p in answer.probs],
        "image": np.round(answer.image, DIGITS).tolist(),
        "steps": answer.steps,
    }


_TEST_IMAGES: dict[str, np.ndarray] = {}  # model name -> its test split's images (made once)


def _test_image(model: ServedModel, index: int) -> np.ndarray:
    from attnkit.data.tasks.vision import VisionData

    if model.name not in _TEST_IMAGES:
        try:
            _TEST_IMAGES[model.name] = VisionData(model.loaded.config.data).split("test").images
        except AttnkitError as exc:  # its data set is not on this machine
            raise ApiError(
                503, "index", f"index: the test images of {model.name!r} cannot be read: {exc}"
            ) from None
    images = _TEST_IMAGES[model.name]
    if not 0 <= index < len(images):
        raise ApiError(422, "index", f"index: the test split has images 0..{len(images) - 1}")
    return images[index]
