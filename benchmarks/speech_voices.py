#!/usr/bin/env python3
"""Exact match per held-out voice, dev and test, for the checkpoints benchmarks/speech.py
trained: which new speaker costs what.

    python benchmarks/speech_voices.py --runs runs/bench_speech \
        --out docs/results/speech_voices_cpu.json

Each checkpoint spells its config's dev and test splits greedily; the exact match is given per
eSpeak voice variant (``m8``, ``f5`` for dev; ``m7``, ``f4``, ``klatt3`` for test), with the
number of utterances it heard in each.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import defaultdict
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))  # machine_info beside this script
from machine_info import one_line  # noqa: E402


def per_voice(model, split: str) -> dict:
    """{variant: {"exact_match": %, "items": n}} of ``model`` (a SpeechModel) on ``split``."""
    from attnkit.data.tasks.speech_set import make_set
    from attnkit.families.speech.evaluate import transcribe

    data = make_set(model.config.data, split)
    right = defaultdict(list)
    for found, item in zip(transcribe(model.net, data), data.items):
        right[item.voice.variant].append(found == item.digits)
    return {
        variant: {"exact_match": round(100 * sum(r) / len(r), 2), "items": len(r)}
        for variant, r in sorted(right.items())
    }


def main() -> None:
    import attnkit

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=Path, default=Path("runs/bench_speech"))
    parser.add_argument("--models", nargs="+", default=["las_location", "las_content", "ctc"])
    parser.add_argument("--out", type=Path, default=None, help="write the JSON here")
    args = parser.parse_args()
    torch.set_num_threads(1)
    rows = []
    for name in args.models:
        model = attnkit.load(args.runs / name / "best", device="cpu")
        row = {"model": name, **{split: per_voice(model, split) for split in ("dev", "test")}}
        print(json.dumps(row), flush=True)
        rows.append(row)
    if args.out is not None:
        doc = {
            "machine": one_line(),
            "command": " ".join(["python", "benchmarks/speech_voices.py", *sys.argv[1:]]),
            "loadavg": Path("/proc/loadavg").read_text().split()[:3],
            "runs": rows,
        }
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(doc, indent=1) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
