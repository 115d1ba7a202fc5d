"""``POST /v1/answer``: a memory network's answer to a question about a story, and where each
hop looked among the story's sentences.

:meth:`attnkit.api.MemoryModel.answer` answers (with ``explain``,
:meth:`~attnkit.api.MemoryModel.explain`: the gradient saliency over the sentences beside the
hops), as in Python. The story is its lines: one sentence a line (bAbI's line numbers may be
kept), or one line of sentences ending in ``.``, ``!`` or ``?``. A story in bAbI's format whose
lines include a question line (``N question<TAB>answer<TAB>supporting ids``) is read as bAbI:
without a ``question`` its last question is asked, and its answer and supporting facts come
back to be drawn beside the hops.

The story is read once, by the API object (:meth:`~attnkit.api.MemoryModel.read`), as the
request is checked: what it refuses is one 422 naming ``story`` or ``question``
(:mod:`attnkit.serve.problems`), the server's limits are checked on what it read, and the
worker answers what it read.
"""

# no "from __future__ import annotations": FastAPI reads the route's request model (built
# from the limits, local to add_route) from the handler's annotation at runtime

from dataclasses import dataclass

from attnkit.data.babi import Question, words
from attnkit.errors import RequestError
from attnkit.families.memnet.schemas import AnswerResponse, request_model
from attnkit.families.serving import Endpoint, Limits, Routes, ServedModel, one_at_a_time


@dataclass(frozen=True)
class MemoryKey:
    model: str
    explain: bool


@dataclass(frozen=True)
class MemoryJob:
    """The story and question as the model read them (its memories, the question, and for a
    bAbI question line its answer and supporting facts)."""

    read: Question


def check_request(model: ServedModel, request, limits: Limits) -> tuple[MemoryKey, MemoryJob]:
    """The batch key and job of a request: the story read by the API object (an InputError
    naming the field), then the server's limits on what it read (RequestError 422)."""
    read = model.loaded.read("\n".join(request.story), request.question)
    if len(read.memories) > limits.max_story_lines:
        raise RequestError(
            422,
            "story",
            f"story: {len(read.memories)} sentences, above the limit of {limits.max_story_lines} "
            "(--max-story-lines)",
        )
    for field, text in [*((f"story[{i}]", s) for i, s in enumerate(read.memories)),
                        ("question", read.question)]:  # fmt: skip
        count = len(words(text))
        if count > limits.max_words:
            raise RequestError(
                422,
                field,
                f"{field}: {count} words, above the limit of {limits.max_words} (--max-words)",
            )
    return MemoryKey(model.name, request.explain), MemoryJob(read)


def run_batch(model: ServedModel, key: MemoryKey, jobs: list[MemoryJob]) -> list:
    """One answer (a dict, or the exception it raised) per job, one at a time."""
    return one_at_a_time(lambda job: _answer(model, key, job), jobs)


def _answer(model: ServedModel, key: MemoryKey, job: MemoryJob) -> dict:
    loaded = model.loaded
    answer = (loaded.explain if key.explain else loaded.answer)(job.read)
    return {
        "model": model.name,
        **answer.to_dict(),
        "hops": int(answer.attention.shape[0]),
        "record": answer.record().to_json(),
    }


def add_route(app, routes: Routes) -> None:
    """``POST /v1/answer``."""
    from fastapi.responses import JSONResponse

    AnswerRequest = request_model(routes.limits)

    @app.post("/v1/answer", response_model=AnswerResponse, responses=routes.errors)
    async def answer(request: AnswerRequest):  # type: ignore[valid-type]
        model = routes.pick(request.model, "memnet")
        key, job = check_request(model, request, routes.limits)
        return JSONResponse(await routes.submit(key, job, 1))


def info(loaded) -> dict:
    """What ``GET /v1/models`` says of a memory network."""
    cfg = loaded.config
    return {
        "task": str(cfg.data.task),
        "attention": f"{cfg.model.hops} hops ({cfg.model.memory})",
        "has_attention": True,
        "layers": None,
        "heads": None,
        "hops": cfg.model.hops,
        "memory_size": loaded.vocab.memory_size,
        "has_gold": True,  # a bAbI question's supporting facts
        "explain": True,
    }


#: a bAbI task 1 story and question (single supporting fact): the explorer opens on it
STORY = ("Mary moved to the bathroom.", "John went to the hallway.", "Daniel went to the garden.")
QUESTION = "Where is Mary?"


def example(loaded) -> dict | None:
    """``{"story": [...], "question": ...}``, the explorer's first story, when the model knows
    every word of it; None otherwise (its view then waits for the user's story)."""
    text = " ".join((*STORY, QUESTION))
    if any(word not in loaded.vocab.ids for word in words(text)):
        return None
    return {"story": list(STORY), "question": QUESTION}


ENDPOINT = Endpoint("/v1/answer", add_route, {MemoryKey: run_batch}, info, example=example)
