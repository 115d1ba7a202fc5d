#!/usr/bin/env python3
"""Where attention misses the gold links: how far from the gold span, and at which output position.

    python benchmarks/alignment_misses.py runs/table/dates_*/best --count 400

Each checkpoint (of a task with gold alignments: numbers, dates) is forced along the first
``--count`` test references, as ``attnkit evaluate`` scores alignment. For every output character
with gold links, the attention's argmax is a *miss* when it falls on no gold-linked source
character (any link, sure or possible). Prints one JSON line per checkpoint: the linked output
characters, the misses, the misses by distance (in source characters) to the nearest gold link
(5 stands for 5 or more), and linked characters and misses by output position (an ISO date's
positions 0-3 are the year, 5-6 the month, 8-9 the day).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from attnkit.data.tasks.gold import gold_aligner  # noqa: E402
from attnkit.data.tasks.registry import build_split  # noqa: E402
from attnkit.families.seq2seq.translator import Translator  # noqa: E402

FAR = 5  # distances of FAR or more are counted together


def misses(model: Path, count: int) -> dict:
    """The miss counts of one checkpoint (see the module's docstring)."""
    translator = Translator.load(model, "cpu")
    aligner = gold_aligner(translator.config.data)
    if aligner is None:
        raise SystemExit(f"{model}: its task has no gold alignments (numbers, dates)")
    pairs = build_split(translator.config.data, "test")[:count]
    sources, refs = [s for s, _ in pairs], [t for _, t in pairs]
    forced = translator.teacher_forced(sources, refs)
    distance, linked, missed = Counter(), Counter(), Counter()
    for source, ref, translation in zip(sources, refs, forced):
        weights = np.asarray(translation.weights)  # (T, S)
        gold = aligner(source, ref)
        for j in gold.linked_outputs():
            if j >= len(weights):
                continue
            span = gold.sources_of(j)
            linked[j] += 1
            looked_at = int(weights[j].argmax())
            if looked_at not in span:
                missed[j] += 1
                distance[min(FAR, min(abs(looked_at - i) for i in span))] += 1
    return {
        "model": str(model),
        "examples": len(pairs),
        "linked": sum(linked.values()),
        "misses": sum(missed.values()),
        "misses_by_distance": dict(sorted(distance.items())),
        "by_output_position": {j: [linked[j], missed[j]] for j in sorted(linked)},
    }


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("models", nargs="+", type=Path, help="checkpoint directories")
    ap.add_argument("--count", type=int, default=400, help="test references (first N)")
    args = ap.parse_args()
    if args.count < 1:
        ap.error("--count must be at least 1")
    for model in args.models:
        print(json.dumps(misses(model, args.count)), flush=True)


if __name__ == "__main__":
    main()
