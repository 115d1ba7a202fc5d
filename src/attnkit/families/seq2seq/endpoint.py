"""``POST /v1/translate``: a request checked, decoded (batched with others), answered.

:func:`check_request` runs on the event loop and refuses a bad request before it can reach a
batch, so a bad request never disturbs another. The request's settings and inputs are checked by
the API object, as in Python and ``attnkit translate``, once: its settings by
:meth:`~attnkit.families.seq2seq.model.Seq2SeqModel.search_options` (n_best above the beam, a
prefix token the target vocabulary lacks), its inputs by
:meth:`~attnkit.families.seq2seq.model.Seq2SeqModel.prepare` (an input the tokenizer cannot
encode), which tokenizes them for the batch. Their :class:`~attnkit.errors.InputError` is one 422
naming the field, answered in one place (:mod:`attnkit.serve.problems`); what only the server
bounds (explain, reference, rollout) is checked here. The worker thread calls :func:`run_batch`
with every waiting request of one :class:`DecodeKey`: their prepared inputs decode together, and
each request gets its own results back.

A request with ``rollout`` (a Transformer's) also gets the first hypothesis' attention rollout
and flow through the encoder (:func:`attnkit.explain.rollout.along_tokens`, forced along that
output), computed in the worker; flow only up to ``--max-flow-work`` (a max-flow per cell of the
map), and above it a line saying why it is missing.
"""

# no "from __future__ import annotations": FastAPI reads the route's request model (built
# from the limits, local to add_route) from the handler's annotation at runtime

import warnings
from dataclasses import dataclass

import numpy as np

from attnkit.data.text_input import Prepared
from attnkit.decoding.search import SearchOptions
from attnkit.decoding.topk import top_k_steps
from attnkit.errors import RequestError
from attnkit.families.seq2seq.schemas import TranslateResponse, request_model
from attnkit.families.serving import Endpoint, Limits, Routes, ServedModel

DIGITS = 6  # decimals of the weights and probabilities sent: more is noise


@dataclass(frozen=True)
class DecodeKey:
    """The settings a batch shares: requests decode together only when all are equal (the
    model's name, and how to decode, as the API object checked it)."""

    model: str
    options: SearchOptions


@dataclass(frozen=True)
class TranslateJob:
    """What one request asks of its batch beyond the shared settings: its inputs, checked and
    tokenized."""

    inputs: Prepared
    explain: bool
    gold: bool
    reference: str | None = None
    flow_work: int | None = None  # rollout asked: the bound of flow's work; None: not asked


def check_request(model: ServedModel, request, limits: Limits) -> tuple[DecodeKey, TranslateJob]:
    """The request's batch key and job; an InputError of the API object's checks, or a
    RequestError (422) of the server's own, naming the field at fault.

    It runs on the event loop while the worker decodes, so it warns about nothing (catching
    warnings is not thread-safe: the worker does it)."""
    loaded = model.loaded
    options = loaded.search_options(
        request.beam, request.n_best, request.alpha, request.prefix, request.top_k, heads=True
    )
    if request.explain and not can_explain(loaded):
        raise RequestError(422, "explain", f"explain: saliency is not available for {model.name!r}")
    explain_inputs = limits.max_explain_inputs
    if request.explain and len(request.inputs) > explain_inputs:
        raise RequestError(
            422,
            "explain",
            f"explain: saliency costs a backward pass per output token; at most "
            f"{explain_inputs} inputs per request with explain (--max-explain-inputs), got "
            f"{len(request.inputs)}",
        )
    if request.reference is not None and len(request.inputs) != 1:
        raise RequestError(
            422,
            "reference",
            f"reference: the right output of one input; got {len(request.inputs)} inputs",
        )
    _check_rollout(model, request, explain_inputs)
    names = [f"inputs[{i}]" for i in range(len(request.inputs))]
    # over-long inputs are truncated (as the tokens sent back show), unless data says error
    prepared = loaded.prepare(request.inputs, names=names, allow_blank=False, warn=False)
    flow_work = limits.max_flow_work if request.rollout else None
    job = TranslateJob(prepared, request.explain, request.gold, request.reference, flow_work)
    return DecodeKey(model.name, options), job


def _check_rollout(model: ServedModel, request, most: int) -> None:
    if not request.rollout:
        return
    if not hasattr(model.loaded.translator.model, "encoder_attention"):
        raise RequestError(
            422,
            "rollout",
            f"rollout: attention rollout and flow are for Transformer models, and "
            f"{model.name!r} is not one",
        )
    if len(request.inputs) > most:
        raise RequestError(
            422,
            "rollout",
            f"rollout: at most {most} inputs per request with rollout (--max-explain-inputs), "
            f"got {len(request.inputs)}",
        )


def run_batch(model: ServedModel, key: DecodeKey, jobs: list[TranslateJob]) -> list:
    """Decode all jobs' inputs as one batch; per job its results, or the exception it raised.

    Should the batch fail as a whole, each job is decoded alone, so that only the job at fault
    hears of it."""
    prepared = jobs[0].inputs
    for job in jobs[1:]:
        prepared = prepared + job.inputs
    try:
        translations, tops = _decode(model.loaded.translator, key, prepared)
    except Exception as exc:
        if len(jobs) == 1:
            return [exc]
        return [run_batch(model, key, [job])[0] for job in jobs]
    answers, start = [], 0
    for job in jobs:
        end = start + len(job.inputs)
        try:
            answers.append(_results(model, job, translations[start:end], tops[start:end]))
        except Exception as exc:
            answers.append(exc)
        start = end
    return answers


def _decode(translator, key: DecodeKey, prepared: Prepared):
    """(translations, top-k of every hypothesis: per translation, per hypothesis)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the answer shows truncation and unknown tokens
        # greedy and beam search keep the top-k as they decode; top_k_steps finds the rest
        translations = translator.decode(prepared, key.options, batch_size=len(prepared.texts))
    top_k = key.options.top_k
    if top_k == 0:
        return translations, [[None] * len(t.nbest) for t in translations]
    flat = top_k_steps(translator, [h for t in translations for h in t.nbest], top_k)
    tops, start = [], 0
    for t in translations:
        tops.append(flat[start : start + len(t.nbest)])
        start += len(t.nbest)
    return translations, tops


def _results(model: ServedModel, job: TranslateJob, translations, tops) -> list[dict]:
    """The ``results`` of one request: one entry per input."""
    translator = model.loaded.translator
    saliency = [None] * len(translations)
    if job.explain:
        from attnkit.explain.no_attention import saliency_translations

        saliency = [_matrix(s.weights) for s in saliency_translations(translator, translations)]
    aligner = None
    if job.gold or job.reference is not None:
        from attnkit.data.tasks.gold import gold_aligner

        aligner = gold_aligner(translator.config.data)
    rolled = _rollouts(model, job, translations)
    results = []
    for t, top, sal, maps in zip(translations, tops, saliency, rolled):
        gold = _gold_links(aligner, t.source, t.output) if job.gold else None
        results.append(
            {
                "input": t.source,
                "source_tokens": t.source_tokens,
                "hypotheses": [_hypothesis(h, k) for h, k in zip(t.nbest, top)],
                "saliency": sal,
                "gold": gold,
                "reference": None
                if job.reference is None
                else _reference(translator, aligner, t.source, job.reference),
                **maps,
            }
        )
    return results


def _gold_links(aligner, source: str, output: str) -> list[list[int]] | None:
    """The task's gold links of ``output`` for ``source``: (output index, source index) pairs;
    None where the task has none or ``output`` is not the source's right one."""
    alignment = None if aligner is None else aligner(source, output)
    return None if alignment is None else [list(link) for link in sorted(alignment.possible)]


def _reference(translator, aligner, source: str, reference: str) -> dict:
    """The model forced to write ``reference`` for ``source`` (as ``explain --reference`` and
    ``Seq2SeqModel.explain(text, reference=...)`` do): its tokens, attention and gold links."""
    (forced,) = translator.teacher_forced([source], [reference])
    return {
        "output": reference,
        "tokens": forced.output_tokens,
        "score": float(forced.score),
        "attention": _matrix(forced.weights),
        "gold": _gold_links(aligner, source, reference),
    }


def _rollouts(model: ServedModel, job: TranslateJob, translations) -> list[dict]:
    """Per translation, its first hypothesis' {"rollout", "flow", "flow_note"} when the job asked
    for them, else those keys null."""
    if job.flow_work is None:
        return [dict.fromkeys(("rollout", "flow", "flow_note")) for _ in translations]
    from attnkit.evaluation.faithfulness_seq2seq import plain
    from attnkit.explain.rollout import along_tokens

    translator, out = model.loaded.translator, []
    sources = {e.index: e.src for e in job.inputs.examples}
    with plain(translator.model):
        for i, t in enumerate(translations):
            maps, note = along_tokens(translator, sources[i], t.output_tokens, job.flow_work)
            flow = maps.get("flow")
            out.append(
                {
                    "rollout": _matrix(maps["rollout"]),
                    "flow": None if flow is None else _matrix(flow),
                    "flow_note": note,
                }
            )
    return out


def _hypothesis(h, top) -> dict:
    layers = h.heads  # (T, L, H, S), Transformer models only
    return {
        "output": h.output,
        "tokens": h.output_tokens,
        "score": float(h.score),
        "attention": _matrix(h.weights),
        "layers": None if layers is None else np.round(np.asarray(layers), DIGITS).tolist(),
        "p_gen": None if h.p_gen is None else np.round(h.p_gen, DIGITS).tolist(),
        "top_k": None
        if top is None
        else [[{"token": tok, "prob": round(p, DIGITS)} for tok, p in step] for step in top],
    }


def _matrix(weights) -> list[list[float]]:
    return np.round(np.asarray(weights, dtype=np.float64), DIGITS).tolist()


def add_route(app, routes: Routes) -> None:
    """``POST /v1/translate``."""
    from fastapi.responses import JSONResponse

    TranslateRequest = request_model(routes.limits)
    limits = routes.limits

    @app.post("/v1/translate", response_model=TranslateResponse, responses=routes.errors)
    async def translate_(request: TranslateRequest):  # type: ignore[valid-type]
        model = routes.pick(request.model, "seq2seq")
        key, job = check_request(model, request, limits)
        results = await routes.submit(key, job, len(job.inputs))
        return JSONResponse({"model": model.name, "results": results})


def can_explain(loaded) -> bool:
    """Whether saliency can be computed (one seq2seq model with an embedding encoder)."""
    from attnkit.explain.no_attention import can_explain as explainable

    translator = loaded.translator
    return explainable(translator) and hasattr(translator.model, "encoder")


def info(loaded) -> dict:
    """What ``GET /v1/models`` says of a seq2seq model."""
    from attnkit.data.tasks.gold import gold_aligner

    translator = loaded.translator
    cfg = translator.config
    layers, heads = cfg.model.layers_and_heads
    return {
        "task": cfg.data.task,
        "attention": "transformer" if layers is not None else cfg.model.attention,
        "has_attention": bool(translator.model.has_attention),
        "layers": layers,
        "heads": heads,
        "has_gold": gold_aligner(cfg.data) is not None,
        "explain": can_explain(loaded),
    }


def example(loaded) -> str | None:
    """The source the explorer opens with (siebenundneunzig for a German number model); None
    for a task read from files."""
    from attnkit.data.tasks.sample_input import sample_input

    return sample_input(loaded.translator.config.data)


ENDPOINT = Endpoint("/v1/translate", add_route, {DecodeKey: run_batch}, info, example=example)
