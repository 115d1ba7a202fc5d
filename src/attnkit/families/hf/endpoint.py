"""``POST /v1/pretrained``: a pretrained Hugging Face model's answer on a text, and every layer's
and head's attention of the forward that answered (or the layer, head, part or mean asked for),
with each part's rollout.

:class:`~attnkit.families.hf.model.PretrainedModel`'s ``classify``, ``encode``, ``generate`` or
``translate`` answers (the one its kind takes), as in Python. The request is checked as it
arrives: a task the model does not take, a blank text, a text (with the tokens it asks to be
written) longer than the model's positions are InputErrors naming the field, one 422 each
(:mod:`attnkit.serve.problems`); a layer or head the answer's attention does not have is the
same, said by the worker once it knows the parts. Requests are answered one at a time.

``heads: true`` adds ``head_summary``: the asked part's (default the result's main part's) head
summary on this text (:meth:`PretrainedResult.head_summary
<attnkit.families.hf.results.PretrainedResult.head_summary>`), counted with the maps against
``--max-map-cells``; ``induction: true`` adds the model's induction scores, read once per model
and part from its seeded repeated block (:meth:`PretrainedModel.head_summary
<attnkit.families.hf.model.PretrainedModel.head_summary>`: at most 50 tokens said twice) and kept.

Shapes: L layers, H heads, T queries, S keys.
"""

# no "from __future__ import annotations": FastAPI reads the route's request model (built
# from the limits, local to add_route) from the handler's annotation at runtime

import weakref
from dataclasses import dataclass

import numpy as np

from attnkit.errors import InputError, RequestError
from attnkit.families.hf import inputs as given
from attnkit.families.hf.schemas import PretrainedResponse, request_model
from attnkit.families.hf.words import merge
from attnkit.families.serving import Endpoint, Limits, Routes, ServedModel, one_at_a_time
from attnkit.families.uploads import check_upload, is_form, parse_json, read_form, upload_body

DIGITS = 5
#: the tokens ``generate`` writes when a request does not say (PretrainedModel.generate's default)
GENERATE_TOKENS = 20
#: the induction scores' seed (PretrainedModel.head_summary's default)
INDUCTION_SEED = 0
#: loaded model -> part -> its induction answer: the same every request, so read once
_INDUCTION: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


@dataclass(frozen=True)
class PretrainedKey:
    model: str


@dataclass(frozen=True)
class PretrainedJob:
    """What one request asks: the text (or an image model's upload), its task, and which maps
    come back."""

    text: str | None
    task: str
    max_new_tokens: int | None
    part: str | None
    layer: int | None
    head: int | None
    mean: bool
    words: bool
    rollout: bool
    max_cells: int  # the server's --max-map-cells
    heads: bool = False
    induction: bool = False
    image: bytes | None = None  # an upload's bytes, for a model that reads images


def check_request(
    model: ServedModel, request, limits: Limits, image: bytes | None = None
) -> tuple[PretrainedKey, PretrainedJob]:
    """The batch key and job of a request (and its upload's bytes, ``image``); an InputError
    naming the field otherwise."""
    loaded = model.loaded
    task = loaded.kind.task
    if request.task is not None and request.task != task:
        raise InputError(
            f"task: {model.name} is {loaded.kind.words} ({loaded.architecture}): its task is "
            f"{task}",
            "task",
        )
    _check_input(model, request.text, image)
    if request.max_new_tokens is not None and task not in ("generate", "translate"):
        raise InputError(
            f"max_new_tokens: {model.name} does not write tokens (it answers {task})",
            "max_new_tokens",
        )
    parts = part_names(loaded)
    if request.part is not None and request.part not in parts:
        raise InputError(f"part: {request.part!r}; {model.name} has {', '.join(parts)}", "part")
    if not loaded.takes_images:
        _check_length(model, request, task)
    _check_heads(model, request, parts)
    job = PretrainedJob(
        request.text,
        task,
        request.max_new_tokens,
        request.part,
        request.layer,
        request.head,
        request.mean,
        request.words,
        request.rollout,
        limits.max_map_cells,
        request.heads,
        request.induction,
        image,
    )
    return PretrainedKey(model.name), job


def _check_input(model: ServedModel, text: str | None, image: bytes | None) -> None:
    """A text for a model that reads text, an upload for one that reads images."""
    if model.loaded.takes_images:
        if text is not None:
            raise InputError(
                f"text: {model.name} reads images: upload one (a multipart form, the file in "
                "'image')",
                "text",
            )
        if image is None:
            raise InputError(
                f"image: {model.name} reads images: upload a PNG or JPEG in the multipart "
                "field 'image', the rest of the request as JSON in 'request'",
                "image",
            )
    elif image is not None:
        raise InputError(f"image: {model.name} reads text: send the text, no image", "image")
    elif text is None:
        raise InputError(f"text: give the text for {model.name} to read", "text")


def _check_heads(model: ServedModel, request, parts: list[str]) -> None:
    """``induction`` only with ``heads``, and of a self-attention part."""
    if not request.induction:
        return
    if not request.heads:
        raise InputError("induction: the induction scores come with heads: true", "induction")
    name = request.part or ("cross" if "cross" in parts else parts[0])
    if name == "cross":
        raise InputError(
            f"induction: {model.name}'s cross part is not self-attention and has no induction "
            "score; ask for part encoder or decoder",
            "induction",
        )


def _check_length(model: ServedModel, request, task: str) -> None:
    """The text (with the tokens a ``generate`` asks to write) within the model's positions, and a
    translation's ``max_new_tokens`` (with the decoder's start token) within its decoder's."""
    loaded = model.loaded
    extra = (request.max_new_tokens or GENERATE_TOKENS) if task == "generate" else 0
    try:
        given.encode_text(loaded.processor, loaded.model, request.text, model.name, extra)
    except InputError as exc:
        if exc.name == "text":
            raise
        raise InputError(f"text: {exc}", "text") from None
    if task == "translate" and request.max_new_tokens is not None:
        limit, where = given.max_positions(loaded.model, loaded.processor)
        if limit is not None and request.max_new_tokens + 1 > limit:
            raise InputError(
                f"max_new_tokens: {request.max_new_tokens} and the start token are more than "
                f"{model.name} holds ({limit}, {where})",
                "max_new_tokens",
            )


def part_names(loaded) -> list[str]:
    """The attention stacks of the model's results."""
    pair = getattr(loaded.model.config, "is_encoder_decoder", False)
    return ["encoder", "decoder", "cross"] if pair else ["self"]


def run_batch(model: ServedModel, key: PretrainedKey, jobs: list[PretrainedJob]) -> list:
    """One answer (a dict, or the exception it raised) per job, one at a time."""
    return one_at_a_time(lambda job: answer(model, job), jobs)


def answer(model: ServedModel, job: PretrainedJob) -> dict:
    """The model's result on ``job.text`` and the maps asked for."""
    loaded = model.loaded
    if job.task == "generate":
        result = loaded.generate(job.text, max_new_tokens=job.max_new_tokens or GENERATE_TOKENS)
    elif job.task == "translate":
        (result,) = loaded.translate(job.text, max_new_tokens=job.max_new_tokens)
    else:
        result = getattr(loaded, job.task)(job.image if job.image is not None else job.text)
    names = [job.part] if job.part is not None else list(result.parts)
    parts = {name: _part(model, result, name, job) for name in names}
    summary = _head_summary(model, result, job) if job.heads else None
    cells = sum(p["maps"].size for p in parts.values()) + _summary_cells(summary)
    if cells > job.max_cells:
        raise RequestError(
            422,
            None,
            f"the maps {'and head summary ' if summary else ''}asked for hold {cells} weights, "
            f"above the limit of {job.max_cells} (--max-map-cells): ask for one part, layer or "
            "head, or mean: true",
        )
    for p in parts.values():
        p["maps"] = np.round(p["maps"], DIGITS).tolist()
    return {
        "model": model.name,
        "task": result.task,
        "source": result.source,
        "output": result.output,
        "label": result.label,
        "probs": None
        if result.probs is None
        else {k: round(p, 6) for k, p in result.probs.items()},
        "words": job.words,
        "parts": parts,
        "head_summary": summary,
        "patches": _patches(loaded, result) if job.image is not None else None,
    }


def _patches(loaded, result) -> dict | None:
    """Where an image model's positions lie on the image (:class:`PatchGrid`)."""
    grid = given.patch_grid(loaded.model, result.parts[result.main].heads.shape[2])
    return None if grid is None else dict(zip(("rows", "cols", "first"), grid))


def _head_summary(model: ServedModel, result, job: PretrainedJob) -> dict:
    """The asked part's head summary on this text (as ``HeadSummary.to_dict``) and its ``part``;
    with ``job.induction``, the model's induction scores as ``induction`` and in each row."""
    name = job.part if job.part is not None else result.main
    found = result.head_summary(name).to_dict()
    found["part"] = name
    found["induction"] = None
    if job.induction:
        scores = _induction(model, name)
        found["induction"] = scores
        for row in found["rows"]:
            row["induction"] = scores["scores"][row["layer"] - 1][row["head"] - 1]
    return found


def _induction(model: ServedModel, name: str) -> dict:
    """The model's seeded induction scores of part ``name`` (L, H), read once and kept."""
    loaded = model.loaded
    kept = _INDUCTION.setdefault(loaded, {})
    if name not in kept:
        found = loaded.head_summary(name, seed=INDUCTION_SEED)
        kept[name] = {
            "title": found.title,
            "period": found.period,
            "seed": INDUCTION_SEED,
            "scores": np.round(found.induction, DIGITS).tolist(),
        }
    return kept[name]


def _summary_cells(summary: dict | None) -> int:
    """The numbers a head summary holds: its distance profile (L, H, T) and a row per head."""
    if summary is None:
        return 0
    rows = len(summary["rows"]) * len(summary["rows"][0])
    profile = summary["profile"]
    return rows + (0 if profile is None else len(profile) * len(profile[0]) * summary["tokens"])


def _chosen(value: int | None, count: int, what: str, model: ServedModel, name: str) -> list[int]:
    """The layers (or heads) asked for, from 0: every one, or ``value`` (from 1) if it exists."""
    if value is None:
        return list(range(count))
    if value > count:
        raise InputError(
            f"{what}: {value}; {model.name}'s {name} attention has {what}s 1 to {count}", what
        )
    return [value - 1]


def _part(model: ServedModel, result, name: str, job: PretrainedJob) -> dict:
    part = result.parts[name]
    layers, heads = part.layers_and_heads
    chosen_layers = _chosen(job.layer, layers, "layer", model, name)
    chosen_heads = _chosen(job.head, heads, "head", model, name)
    # float64: float32 weights rounded would print as 0.16561999917030334
    maps = part.heads[np.ix_(chosen_layers, chosen_heads)].astype(np.float64)  # (L', H', T, S)
    if job.words:
        maps = merge(maps, part.queries, part.keys)
    if job.mean:
        maps = maps.mean(axis=(0, 1), keepdims=True)
    rolled = None
    if job.rollout and (part.kind == "cross" or part.heads.shape[2] == part.heads.shape[3]):
        rolled = np.round(result.rollout(name, job.words), DIGITS).tolist()
    words = part.queries.unit_labels(), part.keys.unit_labels()
    queries, keys = words if job.words else (list(part.queries.labels), list(part.keys.labels))
    return {
        "kind": part.kind,
        "layers": layers,
        "heads": heads,
        "query_tokens": queries,
        "key_tokens": keys,
        "modules": list(part.modules),
        "layer_numbers": [n + 1 for n in chosen_layers],
        "head_numbers": [n + 1 for n in chosen_heads],
        "mean": job.mean,
        "maps": maps,  # (L', H', T, S): made a list once the answer's size is known
        "rollout": rolled,
    }


def add_route(app, routes: Routes) -> None:
    """``POST /v1/pretrained``: a JSON body, or (a model that reads images) a multipart form
    with the file in ``image`` and the JSON body, without ``text``, in ``request``."""
    from fastapi import Request
    from fastapi.responses import JSONResponse

    body = request_model(routes.limits)
    fields = {"request": {"type": "string", "description": "the JSON body, without text"}}

    @app.post(
        "/v1/pretrained",
        response_model=PretrainedResponse,
        responses=routes.errors,
        openapi_extra=upload_body(body.model_json_schema(), fields),
    )
    async def pretrained(request: Request):
        image = None
        if is_form(request):
            image, form = await read_form(request, routes.limits)
            asked = parse_json(body, form.get("request", "{}"))  # its fields named as in JSON
            image = check_upload(image, routes.limits.max_image_side)
        else:
            asked = parse_json(body, await request.body())
        model = routes.pick(asked.model, "hf")
        key, job = check_request(model, asked, routes.limits, image)
        return JSONResponse(await routes.submit(key, job, 1))


def _config_count(config, *names: str) -> int | None:
    for name in names:
        value = getattr(config, name, None)
        if isinstance(value, int) and value > 0:
            return value
    return None


def info(loaded) -> dict:
    """What ``GET /v1/models`` says of a pretrained model."""
    config = loaded.model.config
    limit, _ = given.max_positions(loaded.model, loaded.processor)
    return {
        "task": loaded.kind.task,
        "kind": loaded.kind.name,
        "architecture": loaded.architecture,
        "attention": "sdpa",
        "has_attention": True,
        "layers": _config_count(config, "num_hidden_layers", "num_layers"),
        "heads": _config_count(config, "num_attention_heads", "num_heads"),
        "parts": part_names(loaded),
        "reads": "images" if loaded.takes_images else "text",
        "max_positions": limit,
        "has_gold": False,
        "explain": False,
    }


#: the sentence a text model's view opens with (short: a tiny model holds few positions)
SENTENCE = "the cat sat on the mat"


def example(loaded) -> str | None:
    """A short sentence for a model that reads text; None for an image model (its view waits
    for a picture)."""
    return None if loaded.takes_images else SENTENCE


ENDPOINT = Endpoint(
    "/v1/pretrained", add_route, {PretrainedKey: run_batch}, info, uploads=True, example=example
)
