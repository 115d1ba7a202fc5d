"""The pretrained models' endpoint's request and response bodies (pydantic). The request model is
built from the server's limits, so every limit is a field constraint that pydantic enforces and
the OpenAPI page (``/docs``) shows; requests are strict
(:data:`~attnkit.families.serving.STRICT`)."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, Field, StringConstraints, create_model

from attnkit.families.serving import STRICT, Limits

#: what a request may ask a pretrained model to do (its kind allows one of them)
TASKS = ("classify", "encode", "generate", "translate")
#: the attention stacks of a result: one (``self``), or an encoder-decoder's three
PARTS = ("self", "encoder", "decoder", "cross")


class PartAnswer(BaseModel):
    kind: str = Field(description="self or cross")
    layers: int = Field(description="the part's layers (L)")
    heads: int = Field(description="the part's heads per layer (H)")
    query_tokens: list[str] = Field(description="the rows of each map (T)")
    key_tokens: list[str] = Field(description="the columns of each map (S)")
    modules: list[str] = Field(description="the module of each layer")
    layer_numbers: list[int] = Field(description="the layers `maps` holds, from 1")
    head_numbers: list[int] = Field(description="the heads `maps` holds, from 1")
    mean: bool = Field(description="maps is the mean of those layers and heads: (1, 1, T, S)")
    maps: list[list[list[list[float]]]] = Field(description="(layers, heads, T, S)")
    rollout: list[list[float]] | None = Field(description="attention rollout (T, S), or null")


class InductionAnswer(BaseModel):
    title: str = Field(description="the repeated block the scores were read on")
    period: int = Field(description="the block's tokens (said twice)")
    seed: int = Field(description="the seed the block was drawn with")
    scores: list[list[float]] = Field(description="(layers, heads) induction scores")


class HeadSummaryAnswer(BaseModel):
    part: str = Field(description="the part summarized")
    title: str
    tokens: int = Field(description="the queries summarized (T)")
    causal: bool
    period: int | None = Field(description="null: the text, not a repeated block")
    offset: int
    first: int = Field(description="layers and heads are counted from it (1)")
    modules: list[str]
    entropy_max: float = Field(description="the mean entropy of uniform rows, in nats")
    scores: dict[str, list[list[float]]] = Field(
        description="score -> (layers, heads): entropy, sink, previous, distance (self only)"
    )
    profile: list[list[list[float]]] | None = Field(
        description="(layers, heads, T) mean weight at each distance; null for cross"
    )
    rows: list[dict[str, float]] = Field(description="one per head: layer, head and its scores")
    induction: InductionAnswer | None = Field(description="with induction: true")


class PatchGrid(BaseModel):
    rows: int = Field(description="patches down the image")
    cols: int = Field(description="patches across it")
    first: int = Field(
        description="the position of the first patch (the leading ones: [CLS], a distillation "
        "token); patch (r, c) is position first + r * cols + c of every map"
    )


class PretrainedResponse(BaseModel):
    model: str
    task: str
    source: str = Field(description="the text given, or the image's size")
    output: str = Field(description="the label, the continuation or the translation")
    label: str | None = None
    probs: dict[str, float] | None = None
    words: bool = Field(description="subword tokens merged into words")
    parts: dict[str, PartAnswer]
    head_summary: HeadSummaryAnswer | None = Field(None, description="with heads: true")
    patches: PatchGrid | None = Field(
        None, description="an image model's patches: where each map's positions lie on the image"
    )


def request_model(limits: Limits) -> type[BaseModel]:
    """The request body of the route, constrained by the server's ``limits``."""
    text = Annotated[str, StringConstraints(min_length=1, max_length=limits.max_chars)]
    return create_model(
        "PretrainedRequest",
        __config__=STRICT,
        model=(str | None, Field(None, description="a pretrained model's name; default the first")),
        text=(
            text | None,
            Field(
                None,
                description="the text to run the model on (a model that reads images takes an "
                "upload instead: a multipart form with the file in 'image' and this body, "
                "without text, as JSON in 'request')",
            ),
        ),
        task=(
            Literal[TASKS] | None,  # type: ignore[valid-type]
            Field(None, description="the model's task (its kind allows one); default its own"),
        ),
        max_new_tokens=(
            int | None,
            Field(
                None,
                ge=1,
                le=limits.max_new_tokens,
                description="generate/translate: tokens to write at most (default: generate 20, "
                "translate the model's generation config)",
            ),
        ),
        part=(
            Literal[PARTS] | None,  # type: ignore[valid-type]
            Field(None, description="one attention stack only; default every one the model has"),
        ),
        layer=(int | None, Field(None, ge=1, description="one layer only, from 1")),
        head=(int | None, Field(None, ge=1, description="one head only, from 1")),
        mean=(bool, Field(False, description="the mean of the maps asked for, one (T, S) map")),
        words=(bool, Field(False, description="subword tokens merged into words")),
        rollout=(bool, Field(True, description="add each part's attention rollout")),
        heads=(
            bool,
            Field(
                False,
                description="add the head summary of the part asked for (default the main one) "
                "on this text: each layer's and head's entropy, sink share, previous-token score "
                "and mean distance",
            ),
        ),
        induction=(
            bool,
            Field(
                False,
                description="with heads: add the model's induction scores, read on a seeded "
                "random block said twice",
            ),
        ),
    )
