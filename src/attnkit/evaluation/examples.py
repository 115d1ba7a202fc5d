"""Which decoded examples a report shows, and what it says of each.

Every error comes first (up to :data:`MAX_ERRORS`), then right answers up to
:data:`MAX_EXAMPLES` in all, each group in the order decoded: the report of a model that is
right 398 times in 400 opens on its two mistakes, not on 40 right answers. The examples' maps
are bounded too (:func:`within_cells`): long inputs make each map large (an output of 80 steps
over 500 source characters is 40,000 cells a map, and a Transformer's example carries one a
head besides its mean, rollout and flow), so a report keeps the first chosen examples whose maps
fit :data:`MAX_CELLS` together. An output is right
when it equals one of its references (the rule of the exact-match score). For a translation
task (:func:`is_translation`) a near miss is not simply wrong, so each example also carries its
sentence chrF against its reference (sacrebleu's ``sentence_chrf``), which the report shows.
"""

from __future__ import annotations

import dataclasses
from collections import OrderedDict
from collections.abc import Sequence

import sacrebleu

from attnkit.data.tasks.registry import task_metric
from attnkit.viz.records import AttentionRecord
from attnkit.viz.report import Tally

MAX_ERRORS = 100  # errors a report shows (each is pictured: a page of a few MB at most)
MAX_EXAMPLES = 120  # examples in all: right answers fill up to this after the errors
#: the most map cells (output steps x source tokens, summed over every map an example carries)
#: a report's examples hold: about 20 MB of attention records, and of page. Short inputs never
#: reach it (120 Multi30k examples of a Transformer hold about 1.2 million)
MAX_CELLS = 2_000_000
TRANSLATION_METRICS = ("bleu", "chrf")  # deciding metrics of tasks whose examples get a chrF


def is_translation(data_cfg) -> bool:
    """Whether the task of ``data_cfg`` is scored as translation (multi30k; parallel with
    ``data.metric`` bleu or chrf): its examples carry a sentence chrF."""
    return task_metric(data_cfg).key in TRANSLATION_METRICS


def group_references(pairs: Sequence[tuple[str, str]]) -> OrderedDict[str, list[str]]:
    """source -> every reference target, sources in first-seen order."""
    refs: OrderedDict[str, list[str]] = OrderedDict()
    for src, tgt in pairs:
        refs.setdefault(src, [])
        if tgt not in refs[src]:
            refs[src].append(tgt)
    return refs


def judge(outputs: Sequence[str], refs: Sequence[Sequence[str]]) -> list[bool]:
    """Whether each output equals one of its references."""
    return [output in r for output, r in zip(outputs, refs)]


def choose(
    right: Sequence[bool], max_errors: int = MAX_ERRORS, max_examples: int = MAX_EXAMPLES
) -> list[int]:
    """Indices of the examples to show: the first ``max_errors`` errors, then the first right
    answers up to ``max_examples`` in all (none when the errors fill it)."""
    wrong = [i for i, ok in enumerate(right) if not ok][:max_errors]
    room = max(0, max_examples - len(wrong))
    return wrong + [i for i, ok in enumerate(right) if ok][:room]


def within_cells(
    chosen: Sequence[int], cells: Sequence[int], max_cells: int = MAX_CELLS
) -> list[int]:
    """The first of ``chosen`` (in their order: errors first) whose map cells fit ``max_cells``
    together; ``cells[i]``: what example ``i``'s maps hold. An example bigger than the whole
    bound alone is not kept (none may be)."""
    kept, total = [], 0
    for i in chosen:
        if total + cells[i] > max_cells:
            break
        kept.append(i)
        total += cells[i]
    return kept


def tally(right: Sequence[bool]) -> Tally:
    """How many of all the evaluated examples are wrong: what the report's counts say."""
    return Tally(wrong=sum(not ok for ok in right), total=len(right))


def sentence_chrf(output: str, reference: str) -> float:
    """chrF (0..100) of one output against one reference, as the corpus chrF scores it."""
    return float(sacrebleu.sentence_chrf(output, [reference]).score)


def judged_record(translation, refs: Sequence[str], index: int, chrf: bool) -> AttentionRecord:
    """The record of ``translation``, the output for evaluated input ``index``, against its
    ``refs``: the reference it matched (else the first), whether it is right, its position and,
    when ``chrf``, its sentence chrF (2 decimals)."""
    right = translation.output in refs
    reference = translation.output if right else refs[0]
    score = round(sentence_chrf(translation.output, reference), 2) if chrf else None
    return dataclasses.replace(translation.record(reference), index=index, right=right, chrf=score)
