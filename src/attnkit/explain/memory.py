"""Gradient saliency of a memory network's answer over the story's sentences, beside the hops'
attention.

Each memory's content enters the model scaled by a gate (1: the sentence as it is, 0: an empty
sentence; :class:`attnkit.models.memn2n.MemN2N`'s ``gates``); captum differentiates the
log-probability of the model's answer with respect to those gates:

* ``gradient``: |d log p(answer) / d g_i| (captum ``Saliency``);
* ``input_x_gradient``: the same gradient times the gate (1), signed, made absolute;
* ``integrated_gradients``: integrated from every gate at 0 (an empty story, whose ages the
  temporal encoding still knows) to 1 (Sundararajan et al. 2017).

Each question's saliency is normalised to sum to 1 over its memories, so it reads like one hop's
attention and the two can be compared: ``argmax_agreement`` is the share of questions whose most
salient sentence is the most attended one of some hop.
"""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import numpy as np
import torch
from captum.attr import InputXGradient, IntegratedGradients, Saliency
from torch import Tensor

METHODS = {
    "gradient": Saliency,
    "input_x_gradient": InputXGradient,
    "integrated_gradients": IntegratedGradients,
}


def memory_saliency(
    model, stories: Tensor, counts: Tensor, queries: Tensor, method: str = "gradient"
) -> tuple[Tensor, Tensor]:
    """(saliency (B, M) summing to 1 over each question's memories, the answers (B,)) of
    ``model`` on ``stories`` (B, M, L), ``counts`` (B,), ``queries`` (B, Lq)."""
    with torch.no_grad():
        answers = model(stories, counts, queries).logits.argmax(-1)  # (B,)

    def log_prob(gates: Tensor) -> Tensor:
        b = gates.size(0)
        repeat = b // stories.size(0)  # integrated gradients passes its steps as a batch
        out = model(
            stories.repeat(repeat, 1, 1), counts.repeat(repeat), queries.repeat(repeat, 1), gates
        )
        return torch.log_softmax(out.logits, -1)  # (B, V)

    gates = torch.ones(stories.shape[:2], requires_grad=True)  # (B, M)
    attributor = METHODS[method](log_prob)
    extra = {"baselines": torch.zeros_like(gates)} if method == "integrated_gradients" else {}
    scores = attributor.attribute(gates, target=answers, **extra).detach().abs()  # (B, M)
    mask = torch.arange(stories.size(1))[None, :] < counts[:, None]
    scores = scores * mask
    return scores / scores.sum(-1, keepdim=True).clamp(min=1e-12), answers


def argmax_agreement(attention: Tensor, saliency: Tensor) -> float:
    """Share of questions whose most salient memory is the most attended one at some hop;
    ``attention`` (B, K, M), ``saliency`` (B, M)."""
    top_hops = attention.argmax(-1)  # (B, K)
    top_salient = saliency.argmax(-1, keepdim=True)  # (B, 1)
    return float((top_hops == top_salient).any(-1).float().mean())


def explain_to_dir(loaded, questions: list, method: str, out: Path) -> dict:
    """The hops' attention beside the saliency of ``questions`` (bAbI :class:`Question`) for the
    checkpoint ``loaded`` = (config, vocab, model): scores.json (agreement of the two, and how
    often each lands on a supporting fact) and report.html (a choice of attention or saliency
    on every map) in ``out``; returns the scores."""
    from attnkit.viz.memory import hops_record
    from attnkit.viz.report import write_report

    cfg, vocab, model = loaded
    batch = vocab.encode(questions)
    saliency, answers = memory_saliency(model, batch.stories, batch.counts, batch.queries, method)
    with torch.no_grad():
        attention = model(batch.stories, batch.counts, batch.queries).attention
    has_support = batch.supporting.any(1)
    on_support = batch.supporting.gather(1, saliency.argmax(-1, keepdim=True)).squeeze(1)
    scores = {
        "method": method,
        "questions": len(questions),
        "argmax_agreement": round(argmax_agreement(attention, saliency), 4),
        "saliency_on_support_pct": round(
            100.0 * float(on_support[has_support].float().mean()) if has_support.any() else 0.0, 2
        ),
    }
    records = []
    for i, q in enumerate(questions):
        n = int(batch.counts[i])
        weights = attention[i, :, :n].numpy()  # (K, n)
        record = hops_record(
            q.memories[-n:],
            q.question,
            vocab.tokens[int(answers[i])],
            weights,
            q.supporting,
            q.answer or None,
        )
        record.saliency = np.repeat(saliency[i, :n].numpy()[:, None], weights.shape[0], 1)
        records.append(record)
    out.mkdir(parents=True, exist_ok=True)
    (out / "scores.json").write_text(json.dumps(scores, indent=1), encoding="utf-8")
    with warnings.catch_warnings():  # the static pictures' long sentence labels squeeze them
        warnings.filterwarnings("ignore", message="constrained_layout not applied")
        write_report(
            out / "report.html",
            f"MemN2N on bAbI task {cfg.data.task}: attention beside saliency ({method})",
            scores,
            records,
            cfg.to_dict(),
            notes="Rows: the story's sentences; columns: the hops. The saliency of the answer over "
            "the sentences is the same in every column.",
        )
    return {**scores, "out": str(out)}
