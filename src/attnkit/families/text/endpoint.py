"""``POST /v1/classify_text``: a text classifier's answer on sentences, and the weight of each
word.

:meth:`attnkit.api.TextModel.classify` answers (and, with ``explain``,
:meth:`~attnkit.api.TextModel.explain`: the gradient saliency beside the attention), as in
Python; the requests of one model that wait together are answered in one batch.
"""

# no "from __future__ import annotations": FastAPI reads the route's request model (built
# from the limits, local to add_route) from the handler's annotation at runtime

from dataclasses import dataclass

from attnkit.errors import RequestError
from attnkit.families.serving import Endpoint, Routes, ServedModel
from attnkit.families.text.schemas import TextResponse, request_model

DIGITS = 6


@dataclass(frozen=True)
class SentenceKey:
    model: str
    explain: bool


@dataclass(frozen=True)
class SentenceJob:
    inputs: tuple[str, ...]
    words: tuple[list[str], ...]  # each input's words, as the API object read them


def check_request(model: ServedModel, request, max_explain: int) -> tuple[SentenceKey, SentenceJob]:
    """The batch key and job of a request, its inputs read once by the API object (an
    InputError naming ``inputs[i]``: one 422), or a RequestError for the server's own limit."""
    if request.explain and len(request.inputs) > max_explain:
        raise RequestError(
            422,
            "inputs",
            f"inputs: {len(request.inputs)} with explain: true, above the limit of {max_explain} "
            "(--max-explain-inputs)",
        )
    words = tuple(model.loaded.tokens(t, f"inputs[{i}]") for i, t in enumerate(request.inputs))
    return SentenceKey(model.name, request.explain), SentenceJob(tuple(request.inputs), words)


def run_batch(model: ServedModel, key: SentenceKey, jobs: list[SentenceJob]) -> list:
    """One answer (a list of results) per job, their sentences classified together."""
    texts = [text for job in jobs for text in job.inputs]
    words = [w for job in jobs for w in job.words]
    try:
        answer = model.loaded.explain if key.explain else model.loaded.classify
        results = [_result(r) for r in answer(texts, words=words)]
    except Exception as exc:
        return [exc] * len(jobs)
    out, start = [], 0
    for job in jobs:
        out.append(results[start : start + len(job.inputs)])
        start += len(job.inputs)
    return out


def _result(r) -> dict:
    """A :class:`~attnkit.api.TextClassification` as the API gives it."""
    return {
        **r.to_dict(),
        "probs": {k: round(float(v), DIGITS) for k, v in r.probs.items()},
        "record": r.record().to_json(),
    }


def add_route(app, routes: Routes) -> None:
    """``POST /v1/classify_text``."""
    from fastapi.responses import JSONResponse

    ClassifyTextRequest = request_model(routes.limits)

    @app.post("/v1/classify_text", response_model=TextResponse, responses=routes.errors)
    async def classify_text(request: ClassifyTextRequest):  # type: ignore[valid-type]
        model = routes.pick(request.model, "text")
        key, job = check_request(model, request, routes.limits.max_explain_inputs)
        results = await routes.submit(key, job, len(job.inputs))
        return JSONResponse({"model": model.name, "results": results})


def info(loaded) -> dict:
    """What ``GET /v1/models`` says of a text classifier."""
    cfg = loaded.config
    heads = loaded.net.heads
    return {
        "task": cfg.data.task,
        "attention": cfg.model.attention,
        "encoder": cfg.model.encoder,
        "labels": list(loaded.labels),
        "has_attention": heads > 0,
        "layers": None,
        "heads": heads if heads > 1 else None,
        "has_gold": False,
        "explain": True,
    }


#: sentences the explorer may open with, the first whose words the model knows (SST's style)
EXAMPLES = ("a gripping , moving film", "a dull , tedious movie", "the film is good")


def example(loaded) -> str:
    """The sentence the explorer opens with: the first of :data:`EXAMPLES` the vocabulary holds
    word for word, else the first words it knows (a model of another corpus still shows its
    map)."""
    known = loaded.vocab.stoi
    for sentence in EXAMPLES:
        if all(word in known for word in sentence.split()):
            return sentence
    return " ".join(loaded.vocab.itos[4:9])  # past <pad> <unk> <s> </s>


ENDPOINT = Endpoint("/v1/classify_text", add_route, {SentenceKey: run_batch}, info, example=example)
