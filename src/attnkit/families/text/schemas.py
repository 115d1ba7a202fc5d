"""The text endpoint's request and response bodies (pydantic). The request model is built
from the server's limits, so every limit is a field constraint that pydantic enforces and the
OpenAPI page (``/docs``) shows; requests are strict (:data:`~attnkit.families.serving.STRICT`)."""

from __future__ import annotations

from typing import Annotated

from pydantic import BaseModel, Field, StringConstraints, create_model

from attnkit.families.serving import STRICT, Limits


class TextResult(BaseModel):
    text: str
    tokens: list[str] = Field(description="the words the model read")
    label: str = Field(description="the predicted class")
    probs: dict[str, float] = Field(description="class name -> probability")
    weights: list[float] | list[list[float]] | None = Field(
        description="attention over the words (heads x words for structured self-attention); "
        "null for a model without attention"
    )
    saliency: list[float] | None = Field(None, description="explain: true; gradient saliency")
    method: str | None = None
    record: dict = Field(description="the map as the heatmap renderer draws it (one row)")


class TextResponse(BaseModel):
    model: str
    results: list[TextResult]


def request_model(limits: Limits) -> type[BaseModel]:
    """The request body of the route, constrained by the server's ``limits``."""
    text = Annotated[str, StringConstraints(min_length=1, max_length=limits.max_chars)]
    classify_text = create_model(
        "ClassifyTextRequest",
        __config__=STRICT,
        model=(str | None, Field(None, description="a text model's name; default the first")),
        inputs=(
            list[text],
            Field(min_length=1, max_length=limits.max_inputs, description="sentences to classify"),
        ),
        explain=(bool, Field(False, description="add each answer's gradient saliency")),
    )
    return classify_text
