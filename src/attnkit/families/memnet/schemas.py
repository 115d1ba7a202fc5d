"""The memnet endpoint's request and response bodies (pydantic). The request model is built
from the server's limits, so every limit is a field constraint that pydantic enforces and the
OpenAPI page (``/docs``) shows; requests are strict (:data:`~attnkit.families.serving.STRICT`)."""

from __future__ import annotations

from typing import Annotated

from pydantic import BaseModel, Field, StringConstraints, create_model

from attnkit.families.serving import STRICT, Limits


class AnswerResponse(BaseModel):
    model: str
    question: str
    answer: str = Field(description="the memory network's answer (one word of its vocabulary)")
    sentences: list[str] = Field(description="the memories: the story's latest sentences")
    attention: list[list[float]] = Field(description="hops x sentences, each row summing to 1")
    hops: int
    unknown: list[str] = Field(description="words the model never saw (read as nothing)")
    supporting: list[int] = Field(description="a bAbI question's supporting facts (indices)")
    truth: str | None = Field(description="a bAbI question's answer")
    saliency: list[float] | None = Field(description="explain: true; over the sentences")
    record: dict = Field(description="the map as the heatmap renderer draws it")


def request_model(limits: Limits) -> type[BaseModel]:
    """The request body of the route, constrained by the server's ``limits``."""
    text = Annotated[str, StringConstraints(min_length=1, max_length=limits.max_chars)]
    answer = create_model(
        "AnswerRequest",
        __config__=STRICT,
        model=(str | None, Field(None, description="a memory network's name; default the first")),
        story=(
            list[Annotated[str, StringConstraints(max_length=limits.max_chars)]],
            Field(
                min_length=1,
                max_length=limits.max_story_lines,
                description="the story's lines: one sentence a line (bAbI lines too)",
            ),
        ),
        question=(
            text | None,
            Field(None, description="null: a bAbI story's last question line"),
        ),
        explain=(bool, Field(False, description="add the gradient saliency over the sentences")),
    )
    return answer
