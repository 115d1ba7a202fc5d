"""What a family's server endpoint is given and gives: the server's :class:`Limits`, a
:class:`ServedModel`, the :class:`Routes` it adds its route with, and its :class:`Endpoint`.

The limits bound what one request may ask of the server; each is an ``attnkit serve`` option.
Every limit a request breaks is a 4xx answer naming the field and the limit
(:mod:`attnkit.serve.problems`), and ``GET /v1/models`` lists them so a client can stay inside.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Hashable
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any

from attnkit.errors import ConfigError

#: every request body's pydantic config: a string where a number belongs, or a field the API
#: does not know, is an error naming the field, never a guess (a plain dict, as ConfigDict is a
#: TypedDict: the command line's options import no pydantic)
STRICT = {"strict": True, "extra": "forbid"}


def _limit(default, help_text: str):
    return field(default=default, metadata={"help": help_text})


@dataclass(frozen=True)
class Limits:
    """What one request may ask; the defaults fit a laptop serving a few users."""

    max_chars: int = _limit(500, "characters per input")
    max_inputs: int = _limit(64, "inputs per translate request")
    max_beam: int = _limit(10, "beam size (n_best is at most the beam)")
    max_top_k: int = _limit(20, "top_k: tokens shown per output step")
    max_explain_inputs: int = _limit(8, "inputs of a request with explain (saliency)")
    max_prefix: int = _limit(100, "tokens of a forced target prefix")
    max_flow_work: int = _limit(
        200_000,
        "work of a Transformer map's attention flow (output x source cells x the encoder's "
        "layers x source x source edges: a max-flow per cell; 200,000 is about 2 s of CPU); "
        "above it a rollout request gets rollout alone, and a line saying why",
    )
    max_story_lines: int = _limit(100, "sentences of a memory network's story")
    max_words: int = _limit(50, "words of a story's sentence or of a question")
    max_points: int = _limit(100, "points (or numbers) of a pointer network's instance")
    max_new_tokens: int = _limit(64, "tokens a pretrained model generates for one request")
    max_map_cells: int = _limit(
        2_000_000,
        "attention weights in one answer of a pretrained model (layers x heads x queries x keys "
        "of the maps it returns; ask for one layer, head or part, or their mean, beyond it)",
    )
    max_body_bytes: int = _limit(1_000_000, "bytes of a JSON request body")
    max_image_bytes: int = _limit(2_000_000, "bytes of an uploaded image")
    max_image_side: int = _limit(1024, "pixels of an uploaded image's width and of its height")
    decode_seconds: float = _limit(10.0, "seconds a request may wait and decode before a 504")
    queue_size: int = _limit(256, "requests waiting to decode before a 503")
    header_seconds: float = _limit(
        10.0, "seconds a connection may take to send a request's headers before it is closed"
    )
    body_seconds: float = _limit(30.0, "seconds a request may take to send its body before a 408")
    max_connections: int = _limit(200, "connections and requests at once; more are answered 503")

    def __post_init__(self):
        for f in fields(self):
            value = getattr(self, f.name)
            if not value > 0:
                option = "--" + f.name.replace("_", "-")
                raise ConfigError(f"{option} must be > 0, got {value}")

    def to_dict(self) -> dict:
        return asdict(self)

    @staticmethod
    def help(name: str) -> str:
        """What limit ``name`` bounds, in words."""
        return next(f.metadata["help"] for f in fields(Limits) if f.name == name)


@dataclass
class ServedModel:
    """One checkpoint a server answers with: the API object of its family, under a name."""

    name: str
    directory: Path
    family: str  # the registry's name of its family
    loaded: object  # the family's API object (attnkit.load)
    path: str  # the route that answers this family (``/v1/translate``)

    def wrong_endpoint(self) -> str:
        """The message for a request this model's family is not answered at."""
        return f"model: {self.name!r} is a {self.family} model: use {self.path}"


@dataclass(frozen=True)
class Routes:
    """What a family's endpoint needs to add its route to the server's app."""

    served: dict[str, ServedModel]
    limits: Limits
    #: (model name or None, family) -> the model a request names, or the first of that family
    pick: Callable[[str | None, str], ServedModel]
    #: (batch key, job, inputs) -> the answer, awaited: the micro-batcher's queue, bounded in time
    submit: Callable[[Hashable, object, int], Awaitable[Any]]
    errors: dict  # the OpenAPI ``responses`` of every route (404, 413, 422, 503, 504)


@dataclass(frozen=True)
class Endpoint:
    """A family's server endpoint: its route, how it answers a batch, and what ``GET
    /v1/models`` says of its models."""

    path: str  # ``/v1/solve``
    add_route: Callable[[Any, Routes], None]  # (FastAPI app, Routes) -> None
    #: batch key type -> run_batch(served model, key, jobs) -> one answer (or exception) a job
    runners: dict[type, Callable]
    info: Callable[[object], dict]  # the API object -> the family's fields of /v1/models
    uploads: bool = False  # the route takes a multipart image upload (--max-image-bytes)
    #: the API object -> one input of its view's own form that shows what the model does (the
    #: explorer opens on it, decoded; ``GET /v1/models``' ``example``), or None: nothing to show
    example: Callable[[object], Any] | None = None


def one_at_a_time(answer: Callable, payloads: list) -> list:
    """A runner's answers for requests that do not batch: ``answer(payload)`` for each, or
    the exception it raised (so only the request at fault hears of it)."""
    answers = []
    for payload in payloads:
        try:
            answers.append(answer(payload))
        except Exception as exc:
            answers.append(exc)
    return answers
