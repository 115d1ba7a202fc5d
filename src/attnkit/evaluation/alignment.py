"""Attention measured against gold alignments, and the shape of attention itself.

For a model's attention ``weights`` (T, S) (row j: output token j, column i: source token i;
the ``</s>`` row and column may be present and are never linked) and a gold
:class:`~attnkit.data.tasks.alignment.Alignment`:

* **AER** (alignment error rate, Och & Ney 2003) of the attention's hard alignment A, one link
  per output token to its most-attended source token: ``1 - (|A & S| + |A & P|) / (|A| + |S|)``
  with sure links S and possible links P (S within P). Lower is better; 0 when every argmax
  lands on a sure link of a token that has one and on a possible link otherwise.
* **argmax in span**: the share of output tokens whose most-attended source token is one of
  its gold links (``|A & P| / |A|``).
* **entropy**: the mean over output tokens of ``-sum_i w_i log w_i`` (nats), and the same
  divided by ``log S`` (0: all weight on one token, 1: uniform).
* **coverage**: the attention mass each source token receives over all output tokens
  (``sum_j w_ji``); reported as the share of source tokens that receive less than 0.1 in all
  (*unattended*), and the mean absolute deviation of coverage from 1.

Which output tokens give a hard link is the ``rule``: ``"all"`` (the default, the standard
convention of the ``aer.py`` used by awesome-align and the alignment-scripts) scores every
output token's link, so a token the gold leaves unaligned counts against precision;
``"gold_linked"`` counts only output tokens that have gold links (the synthetic tasks' rule, as
their gold leaves separators and ``</s>`` unlinked by design: see
:mod:`attnkit.data.tasks.alignment`; on the Hansards it gives 0.4-2.1 points lower AER).
Entropy and coverage count every token of every example. All figures are pooled over the corpus
(links summed before dividing), as AER is by convention.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np

from attnkit.data.tasks.alignment import Alignment

UNATTENDED_MASS = 0.1
#: which output tokens give a hard link: every one (standard), or those with gold links
RULES = ("all", "gold_linked")
#: the synthetic tasks' outputs carry ``</s>`` and separators their gold never links
SYNTHETIC_RULE = "gold_linked"


@dataclass
class AlignmentTotals:
    """Counts pooled over a corpus; :meth:`metrics` turns them into percentages."""

    hard_links: int = 0  # |A|
    sure_links: int = 0  # |S|
    hits_sure: int = 0  # |A & S|
    hits_possible: int = 0  # |A & P|
    steps: int = 0
    entropy: float = 0.0
    normalised_entropy: float = 0.0
    source_tokens: int = 0
    unattended: int = 0
    coverage_deviation: float = 0.0
    examples: int = 0
    rule: str = "all"  # one of RULES

    def __post_init__(self):
        if self.rule not in RULES:
            raise ValueError(f"AER rule {self.rule!r}: use one of {', '.join(RULES)}")

    def add(self, weights: np.ndarray, gold: Alignment | None) -> None:
        """Count one example: weights (T, S); gold None counts entropy and coverage only."""
        weights = np.asarray(weights, dtype=np.float64)
        if weights.ndim != 2 or weights.size == 0:
            raise ValueError(
                f"attention weights must be a non-empty (T, S) matrix, got {weights.shape}"
            )
        self.examples += 1
        t, s = weights.shape
        p = np.clip(weights, 1e-12, 1.0)
        row_entropy = -(weights * np.log(p)).sum(axis=1)  # (T,)
        self.steps += t
        self.entropy += float(row_entropy.sum())
        self.normalised_entropy += float(row_entropy.sum() / math.log(s)) if s > 1 else 0.0
        coverage = weights.sum(axis=0)  # (S,)
        self.source_tokens += s
        self.unattended += int((coverage < UNATTENDED_MASS).sum())
        self.coverage_deviation += float(np.abs(coverage - 1.0).sum())
        if gold is None:
            return
        sure = {j: set() for j in gold.linked_outputs()}
        for j, i in gold.sure:
            sure[j].add(i)
        scored = gold.linked_outputs() if self.rule == "gold_linked" else range(t)
        for j in scored:
            if j >= t:
                continue  # an output shorter than its gold: the missing tokens have no argmax
            best = int(weights[j].argmax())
            self.hard_links += 1
            self.hits_possible += best in gold.sources_of(j)
            self.hits_sure += best in sure.get(j, ())
        self.sure_links += sum(1 for j, _ in gold.sure if j < t)

    def metrics(self) -> dict:
        """Percentages (AER, argmax in span, unattended), entropies in nats and 0-1."""
        out: dict = {"examples": self.examples}
        if self.hard_links:
            aer = 1.0 - (self.hits_sure + self.hits_possible) / (self.hard_links + self.sure_links)
            out["aer"] = round(100.0 * aer, 2)
            out["argmax_in_span"] = round(100.0 * self.hits_possible / self.hard_links, 2)
            # recall: the sure gold links the hard alignment finds (precision is argmax in span)
            out["recall"] = round(100.0 * self.hits_sure / max(1, self.sure_links), 2)
            out["linked_steps"] = self.hard_links
        if self.steps:
            out["entropy_nats"] = round(self.entropy / self.steps, 4)
            out["entropy_normalised"] = round(self.normalised_entropy / self.steps, 4)
        if self.source_tokens:
            out["unattended_pct"] = round(100.0 * self.unattended / self.source_tokens, 2)
            out["coverage_deviation"] = round(self.coverage_deviation / self.source_tokens, 4)
        return out


def alignment_metrics(
    items: Iterable[tuple[np.ndarray, Alignment | None]], rule: str = "all"
) -> dict:
    """Pooled metrics of ``(weights (T, S), gold alignment or None)`` pairs; ``rule``: which
    output tokens give a hard link (:data:`RULES`)."""
    totals = AlignmentTotals(rule=rule)
    for weights, gold in items:
        totals.add(weights, gold)
    return totals.metrics()


def score_alignments(translator, aligner, sources, refs, translations) -> dict:
    """Alignment metrics of a decoded split, two ways:

    * ``own_output``: the attention of the model's own output, on the examples it got right
      (only there do the gold links of the source and its output exist);
    * ``teacher_forced``: the attention paid while the model is made to write the first
      reference (:meth:`attnkit.families.seq2seq.translator.Translator.teacher_forced`), on
      every example;
    * ``per_head`` (a Transformer): the teacher-forced scores of every layer's and head's own
      map (:func:`per_head_metrics`).

    sources: the decoded sources; refs: their reference lists; translations: the model's.
    """
    own = (
        (t.weights, aligner(src, t.output))
        for src, r, t in zip(sources, refs, translations)
        if t.output in r
    )
    forced = translator.teacher_forced(list(sources), [r[0] for r in refs], heads=True)
    gold = [aligner(src, r[0]) for src, r in zip(sources, refs)]
    scores = {
        "own_output": alignment_metrics(own, SYNTHETIC_RULE),
        "teacher_forced": alignment_metrics(
            ((t.weights, g) for t, g in zip(forced, gold)), SYNTHETIC_RULE
        ),
    }
    if forced and forced[0].heads is not None:
        scores["per_head"] = per_head_metrics(forced, gold)
    return scores


def per_head_metrics(forced, gold) -> list[dict]:
    """AER and argmax-in-span of every layer's and head's own map (teacher forced), best AER
    first: ``[{"layer": l, "head": h, "aer": ..., "argmax_in_span": ...}, ...]`` (1-based)."""
    _, n_layers, n_heads, _ = forced[0].heads.shape  # (T, L, H, S)
    rows = []
    for layer in range(n_layers):
        for head in range(n_heads):
            maps = ((t.heads[:, layer, head], g) for t, g in zip(forced, gold))
            m = alignment_metrics(maps, SYNTHETIC_RULE)
            rows.append(
                {
                    "layer": layer + 1,
                    "head": head + 1,
                    "aer": m.get("aer"),
                    "argmax_in_span": m.get("argmax_in_span"),
                    "entropy_normalised": m.get("entropy_normalised"),
                }
            )
    return sorted(rows, key=lambda r: (r["aer"] is None, r["aer"]))


def mark_gold(aligner, records) -> None:
    """Give each attention record its task's gold links of its source and output (pictures
    outline those cells); none where the generator cannot align that output (a wrong one may
    not be a number)."""
    for record in records:
        alignment = aligner(record.source, record.output)
        if alignment is not None and record.weights.size:
            rows, cols = record.weights.shape
            record.gold = [(j, i) for j, i in alignment.possible if j < rows and i < cols]
