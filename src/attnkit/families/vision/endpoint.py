"""``POST /v1/classify``: where a vision model looks on one image, step by step.

The image is a test-set image (by index) or an upload (:mod:`attnkit.families.uploads`: within
the server's limits). :meth:`attnkit.api.VisionModel.classify` answers it, as in Python (it makes
an upload, a PNG or JPEG, the model's input as ``attnkit plot --image FILE`` does, and refuses
any other with an InputError: one 422 naming ``image``): the prediction, and where the
model looked from the model kind's ``steps`` (:mod:`attnkit.families.vision.kinds`), the
same data ``report.html`` draws: soft attention maps over the image's regions, or the glimpses of
the Recurrent Attention Model (centre in -1..1, the finest patch's side in pixels).
"""

# no "from __future__ import annotations": FastAPI reads the route's request model (built
# from the limits, local to add_route) from the handler's annotation at runtime

from dataclasses import dataclass

import numpy as np

from attnkit.errors import AttnkitError, InputError, RequestError
from attnkit.families.serving import Endpoint, Routes, ServedModel, one_at_a_time
from attnkit.families.uploads import check_upload, is_form, parse_json, read_form, upload_body
from attnkit.families.vision.schemas import ClassifyResponse, request_model

DIGITS = 6


@dataclass(frozen=True)
class ClassifyKey:
    model: str


@dataclass(frozen=True)
class ClassifyJob:
    upload: bytes | None  # a PNG or JPEG file's bytes, or None for a test image
    index: int | None = None


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
    if is_form(request):
        data, fields = await read_form(request, limits)
        return data, None, fields.get("model")
    parsed = parse_json(body_model, await request.body())
    return None, parsed.index, parsed.model


def _classify_body(body_model) -> dict:
    """The classify route's two request bodies, for the OpenAPI page."""
    return upload_body(body_model.model_json_schema(), {"model": {"type": "string"}})


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


ENDPOINT = Endpoint("/v1/classify", add_route, {ClassifyKey: run_batch}, info, uploads=True)
