"""``POST /v1/solve``: a pointer network's answer for one point set (or list of numbers), and
its attention over the inputs, which *is* the answer.

:meth:`attnkit.api.PointerModel.solve` answers, as in Python: the order chosen (0-based
indices of ``points``), the attention of each step over the slots (``end`` first, then the
points) and, for hull and TSP, the area or tour length of the answer. Duplicate points and
coordinates of the wrong width are 422 answers naming ``points``.
"""

# no "from __future__ import annotations": FastAPI reads the route's request model (built
# from the limits, local to add_route) from the handler's annotation at runtime

from dataclasses import dataclass

from attnkit.families.pointer.schemas import SolveResponse, request_model
from attnkit.families.serving import Endpoint, Routes, ServedModel, one_at_a_time


@dataclass(frozen=True)
class SolveKey:
    model: str
    beam: int


@dataclass(frozen=True)
class SolveJob:
    points: tuple[tuple[float, ...], ...]


def request_job(model: ServedModel, request) -> tuple[SolveKey, SolveJob]:
    """The batch key and job of a request (the schema bounds its size). Its points are checked
    once, by :meth:`~attnkit.api.PointerModel.solve`: a point of the wrong width or equal points
    are its InputError, one 422 naming the field."""
    return SolveKey(model.name, request.beam), SolveJob(tuple(map(tuple, request.points)))


def run_batch(model: ServedModel, key: SolveKey, jobs: list[SolveJob]) -> list:
    """One answer (a dict, or the exception it raised) per job, one at a time."""
    return one_at_a_time(lambda job: _solve(model, key, job), jobs)


def _solve(model: ServedModel, key: SolveKey, job: SolveJob) -> dict:
    solution = model.loaded.solve([list(p) for p in job.points], beam=key.beam)
    return {"model": model.name, **solution.to_dict(), "record": solution.record().to_json()}


def add_route(app, routes: Routes) -> None:
    """``POST /v1/solve``."""
    from fastapi.responses import JSONResponse

    SolveRequest = request_model(routes.limits)

    @app.post("/v1/solve", response_model=SolveResponse, responses=routes.errors)
    async def solve(request: SolveRequest):  # type: ignore[valid-type]
        model = routes.pick(request.model, "pointer")
        key, job = request_job(model, request)
        return JSONResponse(await routes.submit(key, job, 1))


def info(loaded) -> dict:
    """What ``GET /v1/models`` says of a pointer network."""
    data = loaded.config.data
    return {
        "task": data.task,
        "attention": "pointer (additive)",
        "has_attention": True,
        "layers": None,
        "heads": None,
        "points": data.points,
        "dims": data.dims,
        "has_gold": False,
        "explain": False,
    }


#: how many points (or numbers) the explorer opens with, at most the model's own count
SHOWN_POINTS = 8


def example(loaded) -> list[list[float]]:
    """A few random points in the unit square (numbers in [0, 1) for a sorting model), rounded
    to two decimals, the same every time (seed 0): what the explorer opens with."""
    import random

    data = loaded.config.data
    rng = random.Random(0)
    points: list[list[float]] = []
    while len(points) < min(SHOWN_POINTS, data.points):
        point = [round(rng.random(), 2) for _ in range(data.dims)]
        if point not in points:  # distinct: a hull or an order of repeated points is unclear
            points.append(point)
    return points


ENDPOINT = Endpoint("/v1/solve", add_route, {SolveKey: run_batch}, info, example=example)
