"""The toy family's route, ``POST /v1/toy``: a list of numbers -> its attention and pooled value."""

# no "from __future__ import annotations": FastAPI reads the handler's annotations at runtime
from dataclasses import dataclass

from pydantic import BaseModel, Field

from attnkit.families.serving import Endpoint, Routes, one_at_a_time


class ToyRequest(BaseModel):
    model: str | None = None
    numbers: list[float] = Field(min_length=1, max_length=100)


@dataclass(frozen=True)
class ToyKey:
    model: str


def add_route(app, routes: Routes) -> None:
    @app.post("/v1/toy", responses=routes.errors)
    async def toy(request: ToyRequest):
        model = routes.pick(request.model, "toy")
        return await routes.submit(ToyKey(model.name), list(request.numbers), 1)


def run_batch(model, key: ToyKey, jobs: list) -> list:
    def answer(numbers):
        weights, value = model.loaded.attend(numbers)
        return {"model": model.name, "weights": weights, "value": value}

    return one_at_a_time(answer, jobs)


def info(loaded) -> dict:
    return {"task": "max", "attention": "softmax pooling", "has_attention": True}


ENDPOINT = Endpoint("/v1/toy", add_route, {ToyKey: run_batch}, info)
