"""The seq2seq endpoint's request and response bodies (pydantic). The request model is built
from the server's limits, so every limit is a field constraint that pydantic enforces and the
OpenAPI page (``/docs``) shows; requests are strict (:data:`~attnkit.families.serving.STRICT`)."""

from __future__ import annotations

from typing import Annotated

from pydantic import BaseModel, Field, StringConstraints, create_model

from attnkit.families.serving import STRICT, Limits


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


def request_model(limits: Limits) -> type[BaseModel]:
    """The request body of the route, constrained by the server's ``limits``."""
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
    return translate
