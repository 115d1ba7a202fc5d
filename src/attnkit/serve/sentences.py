"""``POST /v1/classify_text``: a text classifier's answer on sentences, and the weight of each
word.

:meth:`attnkit.api.TextModel.classify` answers (and, with ``explain``,
:meth:`~attnkit.api.TextModel.explain`: the gradient saliency beside the attention), as in
Python; the requests of one model that wait together are answered in one batch.
"""

from __future__ import annotations

from dataclasses import dataclass

from attnkit.errors import AttnkitError
from attnkit.serve.models import ServedModel
from attnkit.serve.problems import ApiError

DIGITS = 6


@dataclass(frozen=True)
class SentenceKey:
    model: str
    explain: bool


@dataclass(frozen=True)
class SentenceJob:
    inputs: tuple[str, ...]


def check_request(model: ServedModel, request, max_explain: int) -> tuple[SentenceKey, SentenceJob]:
    """The batch key and job of a request; ApiError 422 naming the field otherwise."""
    if model.family != "text":
        raise ApiError(422, "model", model.wrong_endpoint())
    if request.explain and len(request.inputs) > max_explain:
        raise ApiError(
            422,
            "inputs",
            f"inputs: {len(request.inputs)} with explain: true, above the limit of {max_explain} "
            "(--max-explain-inputs)",
        )
    for i, text in enumerate(request.inputs):
        try:
            model.loaded.tokens(text, f"inputs[{i}]")
        except AttnkitError as exc:
            raise ApiError(422, f"inputs[{i}]", str(exc)) from None
    return SentenceKey(model.name, request.explain), SentenceJob(tuple(request.inputs))


def run_batch(model: ServedModel, key: SentenceKey, jobs: list[SentenceJob]) -> list:
    """One answer (a list of results) per job, their sentences classified together."""
    texts = [text for job in jobs for text in job.inputs]
    try:
        answer = model.loaded.explain if key.explain else model.loaded.classify
        results = [_result(r) for r in answer(texts)]
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
