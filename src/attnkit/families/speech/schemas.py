"""The speech endpoint's request and response bodies (pydantic). The request model is built
from the server's limits; requests are strict (:data:`~attnkit.families.serving.STRICT`)."""

from __future__ import annotations

from typing import Annotated

from pydantic import BaseModel, Field, StringConstraints, create_model

from attnkit.families.serving import STRICT, Limits


class TranscribeResponse(BaseModel):
    model: str
    digits: str = Field(description="the digits heard")
    outputs: list[str] = Field(description="the output labels spelled (LAS: then </s>)")
    weights: list[list[float]] = Field(
        description="outputs x listener frames: attention (CTC: each label's posterior)"
    )
    weights_are: str = Field(description="attention | posterior (a CTC model)")
    features: list[list[float]] = Field(description="feature frames x mel bands (log-mel)")
    stride: int = Field(description="feature frames per listener frame")
    hop: int = Field(description="samples per feature frame")
    rate: int = Field(description="samples per second")
    words: list[list[str | int]] = Field(
        description="a synthesised number's spoken words: [word, first frame, stop frame]"
    )
    audio: str = Field(description="the audio heard, a WAV as a data: URI")
    spoken: str | None = Field(description="the words synthesised (none for an upload)")


def request_model(limits: Limits) -> type[BaseModel]:
    """The request body of the route, constrained by the server's ``limits``: a number to
    synthesise in a language, or a WAV file (base64; the body's size is its bound)."""
    return create_model(
        "TranscribeRequest",
        __config__=STRICT,
        model=(str | None, Field(None, description="a speech model's name; default the first")),
        language=(str | None, Field(None, description="en, de, fr or es (with number)")),
        number=(
            Annotated[str, StringConstraints(min_length=1, max_length=6)] | None,
            Field(None, description="a number of at most 6 digits, spoken by a held-out voice"),
        ),
        wav=(
            Annotated[str, StringConstraints(min_length=1, max_length=limits.max_body_bytes)]
            | None,
            Field(None, description="a WAV file, base64 (instead of language and number)"),
        ),
    )
