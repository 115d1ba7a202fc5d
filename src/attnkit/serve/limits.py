"""The bounds of what one request may ask of the server; each is an ``attnkit serve`` option.

Every limit a request breaks is a 4xx answer naming the field and the limit
(:mod:`attnkit.serve.problems`), and ``GET /v1/models`` lists them so a client can stay inside.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, fields

from attnkit.errors import ConfigError


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
