"""The vision endpoint's request and response bodies (pydantic). The request model is built
from the server's limits, so every limit is a field constraint that pydantic enforces and the
OpenAPI page (``/docs``) shows; requests are strict (:data:`~attnkit.families.serving.STRICT`)."""

from __future__ import annotations

from pydantic import BaseModel, Field, create_model

from attnkit.families.serving import STRICT, Limits


class Glimpse(BaseModel):
    x: float
    y: float
    size: float


class ClassifyStep(BaseModel):
    attention: list[list[float]] | None = None
    glimpse: Glimpse | None = None
    token: str | None = None


class ClassifyResponse(BaseModel):
    model: str
    prediction: str
    probs: list[float] | None
    image: list[list[float]] = Field(description="the image the model saw, grey 0..1, rows x cols")
    steps: list[ClassifyStep]


def request_model(limits: Limits) -> type[BaseModel]:
    """The request body of the route, constrained by the server's ``limits``."""
    classify = create_model(
        "ClassifyRequest",
        __config__=STRICT,
        model=(str | None, Field(None, description="a vision model's name; default the first")),
        index=(int, Field(ge=0, description="a test-set image")),
    )
    return classify
