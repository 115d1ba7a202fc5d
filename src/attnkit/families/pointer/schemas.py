"""The pointer endpoint's request and response bodies (pydantic). The request model is built
from the server's limits, so every limit is a field constraint that pydantic enforces and the
OpenAPI page (``/docs``) shows; requests are strict (:data:`~attnkit.families.serving.STRICT`)."""

from __future__ import annotations

from typing import Annotated

from pydantic import BaseModel, Field, create_model

from attnkit.families.serving import STRICT, Limits


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


def request_model(limits: Limits) -> type[BaseModel]:
    """The request body of the route, constrained by the server's ``limits``."""
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
    return solve
