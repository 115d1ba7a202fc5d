"""Is the attention an explanation? Faithfulness tests of one example at a time.

Every family questions its models through one small protocol, :class:`Subject`: one example,
ready to be asked. It has S *positions* that can be ranked (the source tokens of a seq2seq
input, the words of a sentence, the regions of an image) and U *units*, the decisions to be
explained (each decoding step of a seq2seq output, forced along the model's own output; the one
label of a classifier). A family's adapter is a thin class that says, for its model:

* :meth:`Subject.predict`: the output distributions when only some positions are kept
  (``keep (N, S) bool -> probs (N, U, C)``; erased positions are removed from the input), all N
  erasures in one batched call;
* :meth:`Subject.maps`: the attention-derived importance of each position for each unit
  (``attention``, and ``rollout`` and ``flow`` for a Transformer), each (U, S);
* :meth:`Subject.gradients`: gradient, input x gradient or integrated gradients (captum), (U, S);
* :meth:`Subject.predict_with_attention`: the output distributions when the attention is
  replaced by given weights ((N, U, S) -> (N, U, C)), or None where the model has no single
  attention to replace (then the permutation test and the adversarial search do not apply).

From these :func:`question` computes, per example:

* importance scores by every ranking (the maps, the three gradient methods, leave-one-out
  erasure, random);
* ERASER's comprehensiveness (the drop in the decided class's probability when the top k% are
  erased) and sufficiency (the drop when only they are kept), k in :data:`PERCENTS`, and their
  means over k, the AOPC (DeYoung et al. 2020);
* Kendall's tau and Spearman's rho of each attention map with each gradient method and with
  leave-one-out, per unit, with their p-values (Jain & Wallace 2019);
* the permutation test and the adversarial search of
  :mod:`attnkit.evaluation.faithfulness_attention`.

Shapes: S positions, U units, C classes (output vocabulary), N rows of a batched call,
K percentages, M rankings.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import torch
from torch import Tensor

from attnkit.evaluation.faithfulness_stats import kendall_tau, spearman

#: ERASER's bins: the top k% of positions erased (comprehensiveness) or kept (sufficiency)
PERCENTS = (1, 5, 10, 20, 50)
#: the gradient-based rankings, as :mod:`attnkit.explain.saliency` names them
GRADIENT_METHODS = ("gradient", "input_x_gradient", "integrated_gradients")
#: what the attention-derived maps are compared with (Jain & Wallace 2019)
REFERENCES = (*GRADIENT_METHODS, "leave_one_out")
#: rows per batched call of :meth:`Subject.predict`
CHUNK = 512


class Subject:
    """One example of a family, as the faithfulness tests question it (see the module
    docstring). ``positions``: S labels; ``units``: U labels; ``targets``: (U,) the class each
    unit decided (the model's own output)."""

    positions: list[str]
    units: list[str]
    targets: Tensor

    def predict(self, keep: Tensor) -> Tensor:
        """keep (N, S) bool -> probs (N, U, C): the output with only the kept positions."""
        raise NotImplementedError

    def maps(self) -> dict[str, Tensor]:
        """Attention-derived importance maps by name, each (U, S); {} without attention."""
        return {}

    def gradients(self, method: str, steps: int) -> Tensor:
        """(U, S) non-negative gradient attribution (``method`` of :data:`GRADIENT_METHODS`)."""
        raise NotImplementedError

    def attention(self) -> Tensor | None:
        """(U, S): the attention that :meth:`predict_with_attention` replaces, or None."""
        return None

    def predict_with_attention(self, weights: Tensor) -> Tensor:
        """weights (N, U, S), rows summing to 1 -> probs (N, U, C) with that attention."""
        raise NotImplementedError


@dataclass
class Options:
    """What :func:`question` computes and how hard it tries."""

    percents: tuple[int, ...] = PERCENTS
    ig_steps: int = 16  # integrated gradients: points on the path
    permutations: int = 100  # 0: no permutation test
    adversarial_steps: int = 100  # 0: no adversarial search
    epsilon: float = 0.01  # adversarial: the largest output change (TVD) allowed
    seed: int = 0


@dataclass
class ExampleScores:
    """Everything measured on one example; tensors indexed (method, unit, k) as named."""

    positions: list[str]
    units: list[str]
    scores: dict[str, Tensor]  # ranking name -> (U, S) importance
    comprehensiveness: dict[str, Tensor]  # ranking name -> (U, K)
    sufficiency: dict[str, Tensor]  # ranking name -> (U, K)
    correlations: dict[str, dict]  # "attention~gradient" -> {"tau": [...], "tau_p": [...], ...}
    permutation: dict | None = None  # faithfulness_attention.permutation_test
    adversarial: dict | None = None  # faithfulness_attention.adversarial_search
    percents: tuple[int, ...] = PERCENTS
    timings: dict[str, float] = field(default_factory=dict)

    def to_dict(self) -> dict:
        """Plain JSON types (NaN as None)."""
        return {
            "positions": self.positions,
            "units": self.units,
            "scores": {k: _plain(v) for k, v in self.scores.items()},
            "comprehensiveness": {k: _plain(v) for k, v in self.comprehensiveness.items()},
            "sufficiency": {k: _plain(v) for k, v in self.sufficiency.items()},
            "correlations": self.correlations,
            "permutation": self.permutation,
            "adversarial": self.adversarial,
        }


def _plain(t: Tensor) -> list:
    return [[None if math.isnan(x) else round(x, 6) for x in row] for row in t.tolist()]


def batched(fn, rows: Tensor, chunk: int = CHUNK) -> Tensor:
    """``fn`` over ``rows`` (N, ...) in chunks of ``chunk``, results concatenated on dim 0."""
    return torch.cat([fn(rows[i : i + chunk]) for i in range(0, rows.size(0), chunk)], 0)


def decided(probs: Tensor, targets: Tensor) -> Tensor:
    """probs (N, U, C), targets (U,) -> (N, U): each unit's probability of its decided class."""
    index = targets.view(1, -1, 1).expand(probs.size(0), -1, 1)
    return probs.gather(2, index.to(probs.device)).squeeze(2).float().cpu()


def leave_one_out(subject: Subject, full: Tensor) -> Tensor:
    """(U, S): how much each unit's decided probability drops when each position alone is
    erased; ``full`` (U,) the probabilities with nothing erased."""
    s = len(subject.positions)
    keep = ~torch.eye(s, dtype=torch.bool)  # (S, S): row i erases position i
    dropped = decided(batched(subject.predict, keep), subject.targets)  # (S, U)
    return full.unsqueeze(1) - dropped.T


def counts(s: int, percents: tuple[int, ...]) -> list[int]:
    """How many of ``s`` positions each k% is: ceil(k% of s), at least 1 and at most s."""
    return [min(s, max(1, math.ceil(k * s / 100))) for k in percents]


def top_masks(scores: Tensor, sizes: list[int]) -> Tensor:
    """scores (U, S) -> (U, K, S) bool: the ``sizes[k]`` highest-scoring positions of each unit
    (ties broken by position, first first)."""
    u, s = scores.shape
    order = torch.sort(scores, dim=1, descending=True, stable=True).indices  # (U, S)
    rank = torch.empty_like(order)
    rank.scatter_(1, order, torch.arange(s).expand(u, s))  # (U, S): 0 = most important
    limits = torch.tensor(sizes).view(1, -1, 1)  # (1, K, 1)
    return rank.unsqueeze(1) < limits  # (U, K, S)


def erasure_curves(
    subject: Subject, scores: dict[str, Tensor], full: Tensor, percents: tuple[int, ...]
) -> tuple[dict[str, Tensor], dict[str, Tensor]]:
    """Comprehensiveness and sufficiency of every ranking, each (U, K): ``full`` (U,) minus the
    decided probability with the top k% erased, or with only them kept. Every erasure of the
    example (all rankings, units and k) goes through :meth:`Subject.predict` together, each
    distinct mask once."""
    sizes = counts(len(subject.positions), percents)
    names = list(scores)
    top = torch.stack([top_masks(scores[n].float(), sizes) for n in names])  # (M, U, K, S)
    masks = torch.stack([~top, top], 0)  # (2, M, U, K, S): keep masks
    flat = masks.reshape(-1, masks.size(-1))
    unique, where = torch.unique(flat, dim=0, return_inverse=True)
    probs = decided(batched(subject.predict, unique), subject.targets)  # (X, U)
    m, u, k = top.shape[:3]
    unit = torch.arange(u).view(1, 1, u, 1).expand(2, m, u, k).reshape(-1)
    kept = probs[where, unit].view(2, m, u, k)  # each mask's own unit
    drop = full.view(1, 1, u, 1) - kept
    comp = {n: drop[0, i] for i, n in enumerate(names)}
    suff = {n: drop[1, i] for i, n in enumerate(names)}
    return comp, suff


def aopc(curve: Tensor) -> Tensor:
    """(U, K) -> (U,): the area over the perturbation curve, the mean over the bins."""
    return curve.mean(1)


def rank_agreement(maps: dict[str, Tensor], references: dict[str, Tensor]) -> dict[str, dict]:
    """Per unit, Kendall's tau and Spearman's rho (with p-values) of each attention map with each
    reference scoring: {"attention~gradient": {"tau": [U], "tau_p": [U], "rho": [U],
    "rho_p": [U]}} (None where undefined: fewer than 3 positions or a constant row)."""
    out = {}
    for name, m in maps.items():
        for ref_name, ref in references.items():
            taus = [kendall_tau(a, b) for a, b in zip(m.tolist(), ref.tolist())]
            rhos = [spearman(a, b) for a, b in zip(m.tolist(), ref.tolist())]
            out[f"{name}~{ref_name}"] = {
                "tau": [_none(c.value) for c in taus],
                "tau_p": [_none(c.p) for c in taus],
                "rho": [_none(c.value) for c in rhos],
                "rho_p": [_none(c.p) for c in rhos],
            }
    return out


def _none(x: float) -> float | None:
    return None if math.isnan(x) else round(float(x), 6)


def rankings(subject: Subject, full: Tensor, options: Options) -> dict[str, Tensor]:
    """Every ranking's (U, S) importance scores, higher = more important: the attention maps,
    the gradient methods, leave-one-out, random."""
    scores = {name: m.float().cpu() for name, m in subject.maps().items()}
    for method in GRADIENT_METHODS:
        scores[method] = subject.gradients(method, options.ig_steps).float().cpu()
    scores["leave_one_out"] = leave_one_out(subject, full)
    gen = torch.Generator().manual_seed(options.seed)
    scores["random"] = torch.rand(len(subject.units), len(subject.positions), generator=gen)
    return scores


def question(subject: Subject, options: Options | None = None) -> ExampleScores:
    """Run every faithfulness test on one example (see the module docstring)."""
    import time

    from attnkit.evaluation.faithfulness_attention import adversarial_search, permutation_test

    options = options or Options()
    timings = {}
    start = time.perf_counter()
    keep_all = torch.ones(1, len(subject.positions), dtype=torch.bool)
    full = decided(subject.predict(keep_all), subject.targets)[0]  # (U,)
    scores = rankings(subject, full, options)
    timings["rankings"] = time.perf_counter() - start
    start = time.perf_counter()
    comp, suff = erasure_curves(subject, scores, full, options.percents)
    timings["erasure"] = time.perf_counter() - start
    maps = {n: scores[n] for n in subject.maps()}
    correlations = rank_agreement(maps, {n: scores[n] for n in REFERENCES})
    attention = subject.attention()
    permutation = adversarial = None
    if attention is not None and options.permutations > 0:
        start = time.perf_counter()
        permutation = permutation_test(subject, attention, options.permutations, options.seed)
        timings["permutation"] = time.perf_counter() - start
    if attention is not None and options.adversarial_steps > 0:
        start = time.perf_counter()
        adversarial = adversarial_search(
            subject, attention, options.adversarial_steps, options.epsilon, options.seed
        )
        timings["adversarial"] = time.perf_counter() - start
    return ExampleScores(
        list(subject.positions),
        list(subject.units),
        scores,
        comp,
        suff,
        correlations,
        permutation,
        adversarial,
        tuple(options.percents),
        timings,
    )
