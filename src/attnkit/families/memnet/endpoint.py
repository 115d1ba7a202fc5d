"""``POST /v1/answer``: a memory network's answer to a question about a story, and where each
hop looked among the story's sentences.

:meth:`attnkit.api.MemoryModel.answer` answers (with ``explain``,
:meth:`~attnkit.api.MemoryModel.explain`: the gradient saliency over the sentences beside the
hops), as in Python. The story is its lines: one sentence a line (bAbI's line numbers may be
kept), or one line of sentences ending in ``.``, ``!`` or ``?``. A story in bAbI's format whose
lines include a question line (``N question<TAB>answer<TAB>supporting ids``) is read as bAbI:
without a ``question`` its last question is asked, and its answer and supporting facts come
back to be drawn beside the hops.
"""

# no "from __future__ import annotations": FastAPI reads the route's request model (built
# from the limits, local to add_route) from the handler's annotation at runtime

from dataclasses import dataclass

from attnkit.data.babi import parse_stories, words
from attnkit.errors import AttnkitError, RequestError
from attnkit.families.memnet.schemas import AnswerResponse, request_model
from attnkit.families.serving import Endpoint, Limits, Routes, ServedModel, one_at_a_time


@dataclass(frozen=True)
class MemoryKey:
    model: str
    explain: bool


@dataclass(frozen=True)
class MemoryJob:
    sentences: tuple[str, ...]
    question: str
    supporting: tuple[int, ...] = ()  # indices into sentences (a bAbI question line's)
    truth: str | None = None


def check_request(model: ServedModel, request, limits: Limits) -> tuple[MemoryKey, MemoryJob]:
    """The batch key and job of a request; RequestError 422 naming the field otherwise."""
    loaded = model.loaded
    job = _babi_job(request, loaded.vocab.memory_size) or _plain_job(request)
    if len(job.sentences) > limits.max_story_lines:
        raise RequestError(
            422,
            "story",
            f"story: {len(job.sentences)} sentences, above the limit of {limits.max_story_lines} "
            "(--max-story-lines)",
        )
    for field, text in [*((f"story[{i}]", s) for i, s in enumerate(job.sentences)),
                        ("question", job.question)]:  # fmt: skip
        count = len(words(text))
        if count > limits.max_words:
            raise RequestError(
                422,
                field,
                f"{field}: {count} words, above the limit of {limits.max_words} (--max-words)",
            )
    return MemoryKey(model.name, request.explain), job


def _plain_job(request) -> MemoryJob:
    """The story as sentences (:func:`attnkit.families.memnet.model.story_sentences`) and the
    question."""
    from attnkit.families.memnet.model import story_sentences

    if request.question is None or not request.question.strip():
        raise RequestError(
            422,
            "question",
            "question: ask one (or end a bAbI story with a question line: "
            "'N question<TAB>answer<TAB>supporting ids')",
        )
    try:
        sentences = story_sentences("\n".join(request.story))
    except AttnkitError as exc:
        raise RequestError(422, "story", f"story: {exc}") from None
    return MemoryJob(tuple(sentences), request.question.strip())


def _babi_job(request, memory_size: int) -> MemoryJob | None:
    """The story's last bAbI question (or ``question`` about its facts), None for a story
    without a question line."""
    if not any("\t" in line for line in request.story):
        return None
    try:
        asked = parse_stories("\n".join(request.story), "story", 0, memory_size)
    except AttnkitError as exc:
        raise RequestError(422, "story", str(exc)) from None
    last = asked[-1]
    if request.question is not None and request.question.strip():
        return MemoryJob(last.memories, request.question.strip())
    return MemoryJob(last.memories, last.question, last.supporting, last.answer or None)


def run_batch(model: ServedModel, key: MemoryKey, jobs: list[MemoryJob]) -> list:
    """One answer (a dict, or the exception it raised) per job, one at a time."""
    return one_at_a_time(lambda job: _answer(model, key, job), jobs)


def _answer(model: ServedModel, key: MemoryKey, job: MemoryJob) -> dict:
    loaded = model.loaded
    ask = loaded.explain if key.explain else loaded.answer
    answer = ask(list(job.sentences), job.question)
    kept = len(job.sentences) - len(answer.sentences)  # the memory holds the latest sentences
    answer.supporting = [i - kept for i in job.supporting if i >= kept]
    answer.truth = job.truth
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


ENDPOINT = Endpoint("/v1/answer", add_route, {MemoryKey: run_batch}, info)
