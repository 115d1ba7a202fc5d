"""The FastAPI app of ``attnkit serve``: :func:`create_app` (settings) -> app.

Routes: ``/`` and ``/static/...`` the explorer page (this package's ``static/`` directory, and
the heatmap renderer it shares with the reports, ``attnkit/viz/static/heatmap.js``),
``/healthz``, ``/v1/models``, ``/v1/translate``, ``/v1/classify``, ``/v1/classify_text``,
``/v1/graph/node``, ``/v1/answer`` (memory networks), ``/v1/solve`` (pointer networks), and
FastAPI's ``/docs``.
Decoding happens in the :class:`~attnkit.serve.batching.MicroBatcher`'s worker thread; the
handlers only check requests and wait for answers, so the event loop stays free.
"""

# no "from __future__ import annotations": FastAPI reads the request models built in
# create_app from the handlers' annotations at runtime
import contextlib
import json
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.middleware.cors import CORSMiddleware
from fastapi.responses import FileResponse, JSONResponse
from fastapi.staticfiles import StaticFiles
from pydantic import BaseModel, Field, ValidationError
from starlette.concurrency import run_in_threadpool

from attnkit import __version__
from attnkit.errors import ConfigError
from attnkit.serve import classify, memory, points, sentences, translate
from attnkit.serve.batching import MicroBatcher
from attnkit.serve.limits import Limits
from attnkit.serve.middleware import BodyLimit
from attnkit.serve.models import ServedModel, load_models
from attnkit.serve.problems import ApiError, install_handlers
from attnkit.serve.schemas import (
    AnswerResponse,
    ClassifyResponse,
    ErrorResponse,
    SolveResponse,
    TextResponse,
    TranslateResponse,
    request_models,
)

STATIC = Path(str(resources.files("attnkit.serve") / "static"))
#: the heatmap renderer: viz/ owns it (report.html inlines it), the page loads it from /static
RENDERER = Path(str(resources.files("attnkit.viz") / "static" / "heatmap.js"))


@dataclass
class ServeSettings:
    """What ``attnkit serve`` was asked for (its command-line options)."""

    models: list[Path]
    names: list[str] = field(default_factory=list)
    host: str = "127.0.0.1"
    port: int = 8000
    max_batch: int = 32  # inputs decoded in one call
    max_wait_ms: float = 5.0  # how long the first request of a batch waits for company
    cors: list[str] = field(default_factory=list)  # origins allowed to call from a browser
    limits: Limits = field(default_factory=Limits)
    device: str = "auto"
    page: str = ""  # what the printed address adds to open the page (?second=NAME)


ERRORS = {
    code: {"model": ErrorResponse, "description": text}
    for code, text in (
        (404, "unknown model"),
        (413, "body or image too large"),
        (422, "a field breaks the schema or a limit"),
        (503, "the queue is full"),
        (504, "decoding took too long"),
    )
}


def create_app(settings: ServeSettings, served: dict[str, ServedModel] | None = None) -> FastAPI:
    """The app answering with ``served`` (default: the settings' models, loaded now)."""
    served = (
        served
        if served is not None
        else load_models(settings.models, settings.names, settings.device)
    )
    limits = settings.limits

    # a batch key's type says which endpoint's jobs it groups
    runners = {
        translate.DecodeKey: translate.run_batch,
        classify.ClassifyKey: classify.run_batch,
        sentences.SentenceKey: sentences.run_batch,
        memory.MemoryKey: memory.run_batch,
        points.SolveKey: points.run_batch,
    }

    def run(key, jobs):
        return runners[type(key)](served[key.model], key, jobs)

    batcher = MicroBatcher(run, settings.max_batch, settings.max_wait_ms / 1000, limits.queue_size)

    @contextlib.asynccontextmanager
    async def lifespan(app: FastAPI):
        batcher.start()
        yield
        batcher.stop()  # uvicorn has drained the requests in flight: the queue is empty

    app = FastAPI(
        title="attnkit serve",
        version=__version__,
        description="Translate with trained attention models and see where they looked.",
        lifespan=lifespan,
    )
    app.state.served, app.state.batcher, app.state.limits = served, batcher, limits
    install_handlers(app)
    app.add_middleware(BodyLimit, limits=limits)
    if settings.cors:
        app.add_middleware(
            CORSMiddleware,
            allow_origins=settings.cors,
            allow_methods=["GET", "POST"],
            allow_headers=["Content-Type"],
        )
    _page_routes(app)
    _api_routes(app, served, batcher, limits)
    return app


def _page_routes(app: FastAPI) -> None:
    @app.get("/", include_in_schema=False)
    async def page():
        index = STATIC / "index.html"
        if not index.is_file():
            raise ApiError(404, None, "the explorer page is not installed (serve/static)")
        return FileResponse(index)

    @app.get("/static/heatmap.js", include_in_schema=False)
    async def renderer():  # before the /static mount, which would not find it
        return FileResponse(RENDERER, media_type="text/javascript")

    if STATIC.is_dir():
        app.mount("/static", StaticFiles(directory=STATIC), name="static")


def pick_model(served: dict[str, ServedModel], name: str | None, family: str) -> ServedModel:
    """The model a request names (404 listing the names), or the first of ``family``."""
    if name is None:
        for model in served.values():
            if model.family == family:
                return model
        raise ApiError(422, "model", f"model: no {family} model is served")
    if name not in served:
        raise ApiError(404, "model", f"model: no model named {name!r}; served: {', '.join(served)}")
    return served[name]


class GraphNodeRequest(BaseModel):
    """``POST /v1/graph/node``: one node of a graph model's graph (its index or its name)."""

    model: str | None = None
    node: int | str = Field(..., description="an index, or a node id of the data")


def _api_routes(app, served, batcher: MicroBatcher, limits: Limits) -> None:
    bodies = request_models(limits)
    TranslateRequest = bodies.translate
    ClassifyTextRequest = bodies.classify_text
    AnswerRequest, SolveRequest = bodies.answer, bodies.solve

    @app.get("/healthz")
    async def healthz():
        return {"status": "ok"}

    @app.get("/v1/models")
    async def models():
        return {"models": [m.info(limits) for m in served.values()]}

    @app.post("/v1/translate", response_model=TranslateResponse, responses=ERRORS)
    async def translate_(request: TranslateRequest):  # type: ignore[valid-type]
        model = pick_model(served, request.model, "seq2seq")
        key, job = translate.check_request(model, request, limits)
        results = await batcher.submit(key, job, len(job.inputs), limits.decode_seconds)
        return JSONResponse({"model": model.name, "results": results})

    @app.post("/v1/graph/node", responses=ERRORS)
    async def graph_node(request: GraphNodeRequest):
        model = pick_model(served, request.model, "graph")
        explained = await run_in_threadpool(_explain_node, model, request.node)
        return JSONResponse({"model": model.name, **explained})

    @app.post("/v1/classify_text", response_model=TextResponse, responses=ERRORS)
    async def classify_text(request: ClassifyTextRequest):  # type: ignore[valid-type]
        model = pick_model(served, request.model, "text")
        key, job = sentences.check_request(model, request, limits.max_explain_inputs)
        results = await batcher.submit(key, job, len(job.inputs), limits.decode_seconds)
        return JSONResponse({"model": model.name, "results": results})

    @app.post("/v1/answer", response_model=AnswerResponse, responses=ERRORS)
    async def answer(request: AnswerRequest):  # type: ignore[valid-type]
        model = pick_model(served, request.model, "memnet")
        key, job = memory.check_request(model, request, limits)
        return JSONResponse(await batcher.submit(key, job, 1, limits.decode_seconds))

    @app.post("/v1/solve", response_model=SolveResponse, responses=ERRORS)
    async def solve(request: SolveRequest):  # type: ignore[valid-type]
        model = pick_model(served, request.model, "pointer")
        key, job = points.check_request(model, request)
        return JSONResponse(await batcher.submit(key, job, 1, limits.decode_seconds))

    @app.post(
        "/v1/classify",
        response_model=ClassifyResponse,
        responses=ERRORS,
        openapi_extra=_classify_body(bodies.classify),
    )
    async def classify_(request: Request):
        data, index, name = await _classify_input(request, bodies.classify, limits)
        model = pick_model(served, name, "vision")
        classify.vision_model(model)
        pixels = None if data is None else classify.check_upload(model, data, limits.max_image_side)
        job = classify.ClassifyJob(pixels, index)
        return JSONResponse(
            await batcher.submit(classify.ClassifyKey(model.name), job, 1, limits.decode_seconds)
        )


def _explain_node(model: ServedModel, node: int | str) -> dict:
    """A node's neighbourhood, attention per layer and head, and saliency (``to_dict``), with
    each neighbour's class; a node that is none of the graph's is a 422 naming ``node``."""
    try:
        explained = model.loaded.explain_node(node)
    except ConfigError as exc:
        raise ApiError(422, "node", str(exc)) from None
    graph = model.loaded.graph
    index = {name: i for i, name in enumerate(graph.nodes)}
    classes = [int(graph.y[index[name]]) for name in explained.neighbours]
    return {
        **explained.to_dict(),
        "classes": [graph.classes[c] if c >= 0 else None for c in classes],
        "class_names": graph.classes,
    }


async def _classify_input(request: Request, body_model, limits: Limits):
    """(the upload's bytes or None, a test index or None, the model name or None)."""
    kind = request.headers.get("content-type", "")
    if kind.startswith("multipart/form-data"):
        form = await request.form(max_files=1, max_fields=4, max_part_size=limits.max_image_bytes)
        upload = form.get("image")
        name = form.get("model")
        if upload is None or isinstance(upload, str):
            raise ApiError(422, "image", "image: upload a PNG or JPEG file in the field 'image'")
        data = await upload.read()
        if len(data) > limits.max_image_bytes:
            raise ApiError(
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
