"""``POST /v1/classify``: where a vision model looks on one image, step by step.

The image is a test-set image (by index) or an upload (:func:`check_upload`: within the
server's limits). :meth:`attnkit.api.VisionModel.classify` answers it, as in Python (it makes
an upload, a PNG or JPEG, the model's input as ``attnkit plot --image FILE`` does, and refuses
any other with an InputError: one 422 naming ``image``): the prediction, and where the
model looked from the model kind's ``steps`` (:mod:`attnkit.families.vision.kinds`), the
same data ``report.html`` draws: soft attention maps over the image's regions, or the glimpses of
the Recurrent Attention Model (centre in -1..1, the finest patch's side in pixels).
"""

# no "from __future__ import annotations": FastAPI reads the route's request model (built
# from the limits, local to add_route) from the handler's annotation at runtime

import io
import json
from dataclasses import dataclass

import numpy as np

from attnkit.errors import AttnkitError, InputError, RequestError
from attnkit.families.serving import Endpoint, Routes, ServedModel, one_at_a_time
from attnkit.families.vision.schemas import ClassifyResponse, request_model

DIGITS = 6


@dataclass(frozen=True)
class ClassifyKey:
    model: str


@dataclass(frozen=True)
class ClassifyJob:
    upload: bytes | None  # a PNG or JPEG file's bytes, or None for a test image
    index: int | None = None


def check_upload(data: bytes, max_side: int) -> bytes:
    """An upload within the server's ``--max-image-side`` (read from its header: a 413
    RequestError naming ``image`` above it). The API object decodes it, refusing what is no
    PNG or JPEG it can read (an InputError naming ``image``: one 422)."""
    size = _image_size(data, max_side)
    if size is not None and max(size) > max_side:
        raise RequestError(
            413,
            "image",
            f"image: {size[0]}x{size[1]} pixels, above the limit of {max_side} pixels a side "
            "(--max-image-side)",
        )
    return data


def _image_size(data: bytes, max_side: int) -> tuple[int, int] | None:
    """(width, height) from an image's header, or None when it is no image Pillow knows."""
    from PIL import Image

    try:
        with Image.open(io.BytesIO(data)) as opened:
            return opened.size
    except Image.DecompressionBombError:  # Pillow refuses its header before we could ask
        raise RequestError(
            413,
            "image",
            f"image: more than {2 * Image.MAX_IMAGE_PIXELS:,} pixels, above the limit of "
            f"{max_side} pixels a side (--max-image-side)",
        ) from None
    except Exception:  # not an image: the API object says so, naming the field
        return None


def run_batch(model: ServedModel, key: ClassifyKey, jobs: list[ClassifyJob]) -> list:
    """One answer per job (a dict, or the exception it raised); images run one at a time."""
    return one_at_a_time(lambda job: _classify(model, job), jobs)


def _classify(model: ServedModel, job: ClassifyJob) -> dict:
    """The API's classification (:meth:`attnkit.api.VisionModel.classify`) as the answer."""
    image = job.upload if job.upload is not None else _test_image(model, job.index)
    answer = model.loaded.classify(image)
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
            raise RequestError(
                503, "index", f"index: the test images of {model.name!r} cannot be read: {exc}"
            ) from None
    images = _TEST_IMAGES[model.name]
    if not 0 <= index < len(images):
        raise InputError(f"index: the test split has images 0..{len(images) - 1}", "index")
    return images[index]


def add_route(app, routes: Routes) -> None:
    """``POST /v1/classify``: a JSON body naming a test image, or a multipart upload."""
    from fastapi import Request
    from fastapi.responses import JSONResponse

    body = request_model(routes.limits)

    @app.post(
        "/v1/classify",
        response_model=ClassifyResponse,
        responses=routes.errors,
        openapi_extra=_classify_body(body),
    )
    async def classify_(request: Request):
        data, index, name = await _classify_input(request, body, routes.limits)
        model = routes.pick(name, "vision")
        upload = None if data is None else check_upload(data, routes.limits.max_image_side)
        job = ClassifyJob(upload, index)
        return JSONResponse(await routes.submit(ClassifyKey(model.name), job, 1))


async def _classify_input(request, body_model, limits):
    """(the upload's bytes or None, a test index or None, the model name or None)."""
    from fastapi.exceptions import RequestValidationError
    from pydantic import ValidationError

    kind = request.headers.get("content-type", "")
    if kind.startswith("multipart/form-data"):
        form = await request.form(max_files=1, max_fields=4, max_part_size=limits.max_image_bytes)
        upload = form.get("image")
        name = form.get("model")
        if upload is None or isinstance(upload, str):
            raise RequestError(
                422, "image", "image: upload a PNG or JPEG file in the field 'image'"
            )
        data = await upload.read()
        if len(data) > limits.max_image_bytes:
            raise RequestError(
                413,
                "image",
                f"image: {len(data):,} bytes, above the limit of {limits.max_image_bytes:,} "
                "(--max-image-bytes)",
            )
        return data, None, (name if isinstance(name, str) else None)
    try:
        parsed = body_model.model_validate_json(await request.body())
    except ValidationError as exc:
        raise RequestValidationError(
            [{**e, "loc": ("body", *e["loc"])} for e in exc.errors()]
        ) from None
    return None, parsed.index, parsed.model


def _classify_body(body_model) -> dict:
    """The classify route's two request bodies, for the OpenAPI page."""
    schema = body_model.model_json_schema()
    upload = {
        "type": "object",
        "properties": {
            "image": {"type": "string", "format": "binary", "description": "a PNG or JPEG"},
            "model": {"type": "string"},
        },
        "required": ["image"],
    }
    return {
        "requestBody": {
            "required": True,
            "content": {
                "multipart/form-data": {"schema": upload},
                "application/json": {"schema": json.loads(json.dumps(schema))},
            },
        }
    }


#: what each vision model type attends with
ATTENDS_WITH = {"ram": "glimpse", "show_attend_tell": "spatial", "attention_pooling": "spatial"}


def info(loaded) -> dict:
    """What ``GET /v1/models`` says of a vision model."""
    cfg = loaded.config
    return {
        "task": cfg.data.task,
        "attention": ATTENDS_WITH.get(cfg.model_type, cfg.model_type),
        "model_type": cfg.model_type,
        "has_attention": True,
        "layers": None,
        "heads": None,
        "has_gold": False,
        "explain": False,
    }


ENDPOINT = Endpoint("/v1/classify", add_route, {ClassifyKey: run_batch}, info)
