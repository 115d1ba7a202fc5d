"""The FastAPI app of ``attnkit serve``: :func:`create_app` (settings) -> app.

Routes: ``/`` and ``/static/...`` the explorer page (this package's ``static/`` directory, and
the heatmap renderer it shares with the reports, ``attnkit/viz/static/heatmap.js``),
``/healthz``, ``/v1/models``, each family's route (its endpoint, ``attnkit.families.<name>.
endpoint``: ``/v1/translate``, ``/v1/classify``, ``/v1/classify_text``, ``/v1/graph/node``,
``/v1/answer``, ``/v1/solve``), and FastAPI's ``/docs``.
Decoding happens in the :class:`~attnkit.serve.batching.MicroBatcher`'s worker thread; the
handlers only check requests and wait for answers, so the event loop stays free.
"""

# no "from __future__ import annotations": FastAPI reads the request models built in
# create_app from the handlers' annotations at runtime
import contextlib
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path

from fastapi import FastAPI
from fastapi.middleware.cors import CORSMiddleware
from fastapi.responses import FileResponse
from fastapi.staticfiles import StaticFiles

from attnkit import __version__
from attnkit.errors import RequestError
from attnkit.families import FAMILIES
from attnkit.families.serving import Endpoint, Limits, Routes, ServedModel
from attnkit.serve.batching import MicroBatcher
from attnkit.serve.middleware import BodyLimit
from attnkit.serve.models import describe, load_models
from attnkit.serve.problems import ErrorResponse, install_handlers

STATIC = Path(str(resources.files("attnkit.serve") / "static"))
#: the heatmap renderer: viz/ owns it (report.html inlines it), the page loads it from /static
RENDERER = Path(str(resources.files("attnkit.viz") / "static" / "heatmap.js"))
LISTENING = RENDERER.with_name("listening.js")


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
    runners = {kind: run for e in endpoints().values() for kind, run in e.runners.items()}

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
    uploads = tuple(e.path for e in endpoints().values() if e.uploads)
    app.add_middleware(BodyLimit, limits=limits, uploads=uploads)
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
            raise RequestError(404, None, "the explorer page is not installed (serve/static)")
        return FileResponse(index)

    @app.get("/static/heatmap.js", include_in_schema=False)
    async def renderer():  # before the /static mount, which would not find it
        return FileResponse(RENDERER, media_type="text/javascript")

    @app.get("/static/listening.js", include_in_schema=False)
    async def listening():  # audio drawn: viz/ owns it too (notebook views inline it)
        return FileResponse(LISTENING, media_type="text/javascript")

    if STATIC.is_dir():
        app.mount("/static", StaticFiles(directory=STATIC), name="static")


def pick_model(served: dict[str, ServedModel], name: str | None, family: str) -> ServedModel:
    """The model a request names (404 listing the names; 422 when it is of another family than
    the route answers), or the first of ``family``."""
    if name is None:
        for model in served.values():
            if model.family == family:
                return model
        raise RequestError(422, "model", f"model: no {family} model is served")
    if name not in served:
        raise RequestError(
            404, "model", f"model: no model named {name!r}; served: {', '.join(served)}"
        )
    if served[name].family != family:
        raise RequestError(422, "model", served[name].wrong_endpoint())
    return served[name]


def _api_routes(app, served, batcher: MicroBatcher, limits: Limits) -> None:
    """``/healthz``, ``/v1/models``, and the route of every family with an endpoint (the
    endpoint adds it; a family with no model served answers its route with a 422)."""

    @app.get("/healthz")
    async def healthz():
        return {"status": "ok"}

    @app.get("/v1/models")
    async def models():
        return {"models": [describe(m, limits) for m in served.values()]}

    async def submit(key, job, size: int):
        return await batcher.submit(key, job, size, limits.decode_seconds)

    routes = Routes(
        served=served,
        limits=limits,
        pick=lambda name, family: pick_model(served, name, family),
        submit=submit,
        errors=ERRORS,
    )
    for endpoint in endpoints().values():
        endpoint.add_route(app, routes)


def endpoints() -> dict[str, Endpoint]:
    """Family name -> its server endpoint, for every family that has one."""
    return {name: f.served() for name, f in FAMILIES.items() if f.endpoint is not None}
