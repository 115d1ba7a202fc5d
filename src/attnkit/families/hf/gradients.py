"""Gradient saliency of a pretrained model's answer, beside its attention: ``m.explain(text,
method=)`` of :class:`~attnkit.families.hf.model.PretrainedModel`.

The answer is differentiated with respect to the input token embeddings (the output of the
model's ``get_input_embeddings()``, fed back as ``inputs_embeds``), with captum through
:func:`attnkit.explain.saliency.embedding_attributions` (gradient norm, input x gradient,
integrated gradients from a zero embedding); each row sums to 1. What is explained:

* ``classify``: the log-probability of the predicted label (one row) over the input tokens,
  beside the last layer's attention (heads averaged) of the position the head reads
  (:func:`reading_position`: the first token for an encoder's [CLS], the last for a causal
  model's);
* ``generate``: the log-probability of each generated token, teacher-forced along the output,
  over the whole sequence (prompt and output), beside the mean attention (layers and heads) of
  the position that predicted it;
* ``translate``: the log-probability of each output token (``</s>`` included) over the source
  tokens, beside the mean cross-attention.

A model whose output from its embeddings differs from its output from the ids (one that scales or
adds to ``inputs_embeds`` otherwise) is refused in one line rather than explained wrongly.

Shapes: U explained units (rows), S input positions, D embedding width, B rows of a batch.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import torch
from torch import Tensor

from attnkit.errors import AttnkitError
from attnkit.explain.explanation import Explanation
from attnkit.explain.saliency import METHODS, embedding_attributions
from attnkit.families.hf.words import Tokens, merge

#: the largest difference allowed between the answer from the ids and from the embeddings
SAME_OUTPUT = 1e-4


def reading_position(heads: np.ndarray) -> int:
    """The position a classifier's head reads, from its self-attention (L, H, T, T): the last
    for a causal model (nothing above the diagonal), else the first ([CLS], ``<s>``)."""
    causal = heads.shape[-1] > 1 and float(np.triu(heads[-1].max(0), 1).max()) < 1e-9
    return heads.shape[-1] - 1 if causal else 0


def _check_method(method: str) -> str:
    method = method.replace("-", "_")
    if method not in METHODS:
        raise AttnkitError(f"method {method!r}: use one of {', '.join(METHODS)}")
    return method


def _scorer(pm, result, inputs: dict) -> tuple[Callable[[dict], Tensor], Tensor | None]:
    """(inputs dict with ``input_ids`` or ``inputs_embeds`` (B, S, D) -> (B, U) log-probability
    of each explained unit, the ids teacher-forced for a generator or translator)."""
    model, extra = pm.model, {k: v for k, v in inputs.items() if k != "input_ids"}

    def batch(given: dict) -> dict:
        rows = next(iter(given.values())).size(0)
        return {**{k: v.expand(rows, *v.shape[1:]) for k, v in extra.items()}, **given}

    if result.task == "classify":
        target = int(np.argmax(result.logits))

        def label(given: dict) -> Tensor:
            return _log_probs(model(**batch(given)).logits)[:, target : target + 1]

        # without a padding token, a causal classifier's head takes one row a call
        return label if model.config.pad_token_id is not None else _row_by_row(label)
    sequence = torch.tensor([result.ids], device=pm.device)  # (1, T)
    if result.task == "translate":
        extra["decoder_input_ids"] = sequence[:, :-1]
        chosen = sequence[:, 1:]  # (1, U)
        return lambda given: _picked(model(**batch(given)).logits, chosen)
    start = inputs["input_ids"].shape[1]  # generate: the prompt's length
    extra = {"attention_mask": torch.ones_like(sequence)}  # as the result's forward ran
    chosen = sequence[:, start:]
    return lambda given: _picked(model(**batch(given)).logits[:, start - 1 : -1], chosen)


def _row_by_row(score: Callable[[dict], Tensor]) -> Callable[[dict], Tensor]:
    """``score`` of a batch of inputs, called one row at a time."""

    def each(given: dict) -> Tensor:
        rows = next(iter(given.values())).size(0)
        return torch.cat([score({k: v[i : i + 1] for k, v in given.items()}) for i in range(rows)])

    return each


def _log_probs(logits: Tensor) -> Tensor:
    return torch.log_softmax(logits.float(), -1)


def _picked(logits: Tensor, chosen: Tensor) -> Tensor:
    """logits (B, U, V), chosen (1, U) -> (B, U) each chosen token's log-probability."""
    index = chosen.expand(logits.size(0), -1).unsqueeze(-1)
    return _log_probs(logits).gather(2, index).squeeze(2)


def saliency(pm, result, method: str = "gradient", steps: int = 16) -> np.ndarray:
    """(U, S) the saliency of ``result`` (a text ``classify``, ``generate`` or ``translate``
    result of ``pm``) over its input positions, each row summing to 1."""
    method = _check_method(method)
    if pm.takes_images or result.task == "encode":
        raise AttnkitError(
            f"saliency: explains a text model's answer (classify, generate, translate), not "
            f"{'an image' if pm.takes_images else 'an encoding'}"
        )
    inputs, _ = pm._text(result.source)
    ids = inputs["input_ids"]
    if result.task == "generate":
        ids = torch.tensor([result.ids], device=pm.device)  # the prompt and what it wrote
        if ids.shape[1] <= inputs["input_ids"].shape[1]:
            raise AttnkitError("saliency: the model generated nothing to explain")
    score = _scorer(pm, result, inputs)
    with torch.no_grad():
        embedded = pm.model.get_input_embeddings()(ids)  # (1, S, D)
        gap = (score({"input_ids": ids}) - score({"inputs_embeds": embedded})).abs().max()
    if float(gap) > SAME_OUTPUT:
        raise AttnkitError(
            f"saliency: {pm.name} gives another answer from its input embeddings than from its "
            f"ids ({float(gap):.2g} apart), so its gradients would explain another model"
        )
    maps = embedding_attributions(lambda e: score({"inputs_embeds": e}), embedded, method, steps)
    return maps.float().cpu().numpy()


def _attention(result, start: int) -> tuple[np.ndarray, Tokens | None, Tokens]:
    """(the attention beside the saliency (U, S), the rows' tokens (None: one label), the
    columns' tokens); ``start``: a generator's prompt length."""
    if result.task == "translate":
        part = result.part("cross")
        return part.heads.mean(axis=(0, 1)), part.queries, part.keys
    part = result.part("self")
    if result.task == "classify":
        row = reading_position(part.heads)
        return part.heads[-1, :, row : row + 1].mean(0), None, part.keys
    # generate: position p predicts token p + 1, so the rows of the prompt's last position on
    rows = part.heads.mean(axis=(0, 1))[start - 1 : -1]
    q = part.queries
    return rows, Tokens(q.labels[start:], q.words[start:], dict(q.word_labels)), part.keys


def explain(pm, result, method: str = "gradient", steps: int = 16, words: bool = False):
    """``result``'s attention beside its saliency, as an
    :class:`~attnkit.explain.explanation.Explanation` (``.show()``, ``.plot()``,
    ``.to_dict()``), with their agreement (``scores``); ``words``: subwords merged to words."""
    from attnkit.evaluation.agreement import argmax_agreement, rank_correlation

    method = _check_method(method)
    salient = saliency(pm, result, method, steps)
    start = len(pm._text(result.source)[1]) if result.task == "generate" else 0
    attention, rows, cols = _attention(result, start)
    if attention.shape != salient.shape:  # pragma: no cover - the two come from one sequence
        raise AttnkitError(f"saliency {salient.shape} and attention {attention.shape} differ")
    if words:
        attention, salient = (merge(m, rows, cols) for m in (attention, salient))
    row_labels = [result.output] if rows is None else _labels(rows, words)
    pairs = [(attention, salient)]
    scores = {
        "argmax_agreement": argmax_agreement(pairs),
        "rank_correlation": rank_correlation(pairs),
    }
    return Explanation(
        result.source,
        _labels(cols, words),
        result.output,
        row_labels,
        np.asarray(attention, np.float64),
        np.asarray(salient, np.float64),
        method,
        scores,
    )


def _labels(tokens: Tokens, words: bool) -> list[str]:
    return tokens.unit_labels() if words else list(tokens.labels)


def explain_report(pm, texts, method: str = "gradient", out=None, picture=None) -> dict:
    """What ``attnkit explain --model hf:DIR TEXT...`` does: each text explained
    (:func:`explain`) and the agreement of attention and saliency over all of them; ``picture``:
    the one text's pair of maps drawn to that file; ``out``: explanations.json, scores.json and
    report.html written there (neither: the scores alone)."""
    import json
    from pathlib import Path

    from attnkit.evaluation.agreement import argmax_agreement, rank_correlation
    from attnkit.viz.report import write_report

    if not texts:
        raise AttnkitError(f"give the TEXTs to explain ({pm.name} has no split of its own)")
    if picture is not None and len(texts) != 1:
        raise AttnkitError(f"-o {picture}: draws one text; {len(texts)} were given")
    explained = [explain(pm, pm.run(text), method) for text in texts]
    pairs = [(e.attention, e.saliency) for e in explained]
    scores = {
        "method": _check_method(method),
        "inputs": len(explained),
        "argmax_agreement": argmax_agreement(pairs),
        "rank_correlation": rank_correlation(pairs),
    }
    if picture is not None:
        explained[0].plot(str(picture)).clear()
        return {**scores, "picture": str(picture)}
    if out is not None:
        out = Path(out)
        out.mkdir(parents=True, exist_ok=True)
        dicts = [e.to_dict() for e in explained]
        (out / "explanations.json").write_text(json.dumps(dicts), encoding="utf-8")
        (out / "scores.json").write_text(json.dumps(scores, indent=1), encoding="utf-8")
        records = [e.record() for e in explained]
        write_report(out / "report.html", f"attnkit explain {pm.name} ({method})", scores, records)
        scores["out"] = str(out)
    return scores
