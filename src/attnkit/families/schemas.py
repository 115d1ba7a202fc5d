"""The request and response bodies of the API, as pydantic models.

The request models are built from the server's :class:`~attnkit.families.serving.Limits`
(:func:`request_models`), so every limit is a field constraint: pydantic enforces it, and the
OpenAPI page (``/docs``) shows it. Requests are strict: a string where a number belongs, or a
field the API does not know, is an error naming the field, never a guess.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field, StringConstraints, create_model

from attnkit.families.serving import Limits

STRICT = ConfigDict(strict=True, extra="forbid")


class TopToken(BaseModel):
    token: str
    prob: float


class Hypothesis(BaseModel):
    output: str
    tokens: list[str] = Field(description='output tokens, "</s>" included when the output ended')
    score: float = Field(description="log-probability of the output")
    attention: list[list[float]] = Field(description="len(tokens) rows x len(source_tokens)")
    layers: list[list[list[list[float]]]] | None = Field(
        None, description="tokens x layers x heads x source: Transformer models only"
    )
    top_k: list[list[TopToken]] | None = Field(
        None, description="per output step, the model's top_k tokens given the tokens before"
    )
    p_gen: list[float] | None = Field(
        None, description="per output token, a copying model's switch (1 written, 0 copied)"
    )


class Reference(BaseModel):
    output: str = Field(description="the reference, as the request gave it")
    tokens: list[str] = Field(description="its tokens as the model wrote them (forced)")
    score: float = Field(description="the model's log-probability of the reference")
    attention: list[list[float]] = Field(description="len(tokens) rows x len(source_tokens)")
    gold: list[tuple[int, int]] | None = Field(
        description="(output index, source index) gold links of the reference; null where the "
        "task has none or the reference is not this source's right output"
    )


class TranslateResult(BaseModel):
    input: str
    source_tokens: list[str] = Field(description='what the encoder read, "</s>" included')
    hypotheses: list[Hypothesis] = Field(description="n_best of them, best first")
    saliency: list[list[float]] | None = Field(
        None, description="explain: true; the first hypothesis' gradient saliency"
    )
    gold: list[tuple[int, int]] | None = Field(
        None, description="gold: true: (output index, source index) links of the first hypothesis"
    )
    reference: Reference | None = Field(
        None, description="reference given: the model forced to write it, with its gold links"
    )
    rollout: list[list[float]] | None = Field(
        None,
        description="rollout: true (a Transformer): the first hypothesis' attention rollout "
        "through the encoder, the shape of its attention",
    )
    flow: list[list[float]] | None = Field(
        None, description="rollout: true: its attention flow, where the work is within the bound"
    )
    flow_note: str | None = Field(None, description="why flow is null when rollout is not")


class TranslateResponse(BaseModel):
    model: str
    results: list[TranslateResult]


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


class SolveResponse(BaseModel):
    model: str
    task: str
    points: list[list[float]]
    order: list[int] = Field(description="the points chosen, in order (0-based)")
    attention: list[list[float]] = Field(description="steps x (1 + points): end slot first")
    log_prob: float
    tour_length: float | None = None
    area: float | None = None
    record: dict = Field(description="the map as the heatmap renderer draws it")


class ErrorDetail(BaseModel):
    field: str | None
    message: str


class ErrorResponse(BaseModel):
    error: ErrorDetail


@dataclass(frozen=True)
class RequestModels:
    """The request models of one server (their constraints are its limits)."""

    translate: type[BaseModel]
    classify: type[BaseModel]
    classify_text: type[BaseModel]
    answer: type[BaseModel]
    solve: type[BaseModel]


def request_models(limits: Limits) -> RequestModels:
    """The request bodies of every endpoint, constrained by ``limits``."""
    text = Annotated[str, StringConstraints(min_length=1, max_length=limits.max_chars)]
    translate = create_model(
        "TranslateRequest",
        __config__=STRICT,
        model=(str | None, Field(None, description="a name from /v1/models; default the first")),
        inputs=(
            list[text],
            Field(min_length=1, max_length=limits.max_inputs, description="texts to translate"),
        ),
        beam=(int, Field(1, ge=1, le=limits.max_beam, description="beam size; 1 is greedy")),
        n_best=(int, Field(1, ge=1, le=limits.max_beam, description="outputs per input <= beam")),
        alpha=(
            float | None,
            Field(None, ge=0, allow_inf_nan=False, description="length penalty; null: config's"),
        ),
        prefix=(
            list[Annotated[str, StringConstraints(min_length=1)]] | None,
            Field(
                None,
                max_length=limits.max_prefix,
                description="target tokens every output starts with (the what-if)",
            ),
        ),
        top_k=(
            int,
            Field(5, ge=0, le=limits.max_top_k, description="tokens per step; 0: none"),
        ),
        explain=(bool, Field(False, description="add the gradient saliency of the first output")),
        gold=(bool, Field(False, description="add gold alignment links where the task has them")),
        reference=(
            text | None,
            Field(
                None,
                description="the right output of the one input: the model is forced to write it "
                "(teacher forcing) and its attention and gold links come back as `reference`",
            ),
        ),
        rollout=(
            bool,
            Field(
                False,
                description="a Transformer: add the first output's attention rollout and flow "
                "(Abnar & Zuidema 2020)",
            ),
        ),
    )
    classify = create_model(
        "ClassifyRequest",
        __config__=STRICT,
        model=(str | None, Field(None, description="a vision model's name; default the first")),
        index=(int, Field(ge=0, description="a test-set image")),
    )
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
    return RequestModels(translate, classify, classify_text, *_memory_and_pointer(limits, text))


def _memory_and_pointer(limits: Limits, text) -> tuple[type[BaseModel], type[BaseModel]]:
    """The answer (memory networks) and solve (pointer networks) request bodies."""
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
    coordinate = Annotated[float, Field(allow_inf_nan=False)]
    solve = create_model(
        "SolveRequest",
        __config__=STRICT,
        model=(str | None, Field(None, description="a pointer network's name; default the first")),
        points=(
            list[Annotated[list[coordinate], Field(min_length=1, max_length=2)]],
            Field(
                min_length=1,
                max_length=limits.max_points,
                description="points [x, y] (hull, TSP) or [value] (sort)",
            ),
        ),
        beam=(int, Field(1, ge=1, le=limits.max_beam, description="beam size; 1 is greedy")),
    )
    return answer, solve
