#!/usr/bin/env python3
"""Exact match per held-out voice (or per language), dev and test, for the checkpoints
benchmarks/speech.py trained: which new speaker costs what.

    python benchmarks/speech_voices.py --runs runs/bench_speech \
        --out docs/results/speech_voices_cpu.json
    python benchmarks/speech_voices.py --runs runs/bench_speech --by language --splits test

Each checkpoint spells its config's dev and test splits greedily; the exact match is given per
eSpeak voice variant (``m8``, ``f5`` for dev; ``m7``, ``f4``, ``klatt3`` for test), or with
``--by language`` per language, with the number of utterances it heard in each. A model that
attends (LAS, the Transformer) also has its teacher-forced attention scored against the gold
word timings in each group: AER, as benchmarks/speech.py scores it over the whole split.
``--data-dir`` is the audio cache to speak the splits into (the one the models trained with,
to read it rather than speak it again).
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


def per_group(model, split: str, by: str = "voice", data_dir=None) -> dict:
    """{group: {"exact_match": %, "items": n[, "aer": %]}} of ``model`` (a SpeechModel) on
    ``split``, a group per voice variant (``by="voice"``) or per language; AER where the model
    attends."""
    from attnkit.data.location import checkpoint_data
    from attnkit.data.tasks.speech_set import SpeechSet, make_set
    from attnkit.families.speech.evaluate import attention_alignment, transcribe

    config = checkpoint_data(model.config.data, data_dir)
    data = make_set(config, split)
    groups = defaultdict(list)  # group -> indices of its items
    for i, item in enumerate(data.items):
        groups[item.voice.variant if by == "voice" else item.voice.language].append(i)
    found = transcribe(model.net, data)
    rows = {}
    for group, indices in sorted(groups.items()):
        right = [found[i] == data.items[i].digits for i in indices]
        rows[group] = {"exact_match": round(100 * sum(right) / len(right), 2), "items": len(right)}
        if model.config.model.kind != "ctc":  # CTC has no attention to score
            part = SpeechSet(*([getattr(data, k)[i] for i in indices] for k in _FIELDS))
            scored = attention_alignment(model.net, part, config.mel.hop, config.directory)
            rows[group]["aer"] = scored["aer"]
    return rows


_FIELDS = ("items", "features", "targets")


def main() -> None:
    import attnkit

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=Path, default=Path("runs/bench_speech"))
    parser.add_argument("--models", nargs="+", default=["las_location", "las_content", "ctc"])
    parser.add_argument("--by", choices=("voice", "language"), default="voice")
    parser.add_argument("--splits", nargs="+", choices=("dev", "test"), default=["dev", "test"])
    parser.add_argument("--data-dir", type=Path, default=None, help="the audio cache to use")
    parser.add_argument("--out", type=Path, default=None, help="write the JSON here")
    args = parser.parse_args()
    torch.set_num_threads(1)
    rows = []
    for name in args.models:
        model = attnkit.load(args.runs / name / "best", device="cpu")
        row = {"model": name, "by": args.by}
        row.update({s: per_group(model, s, args.by, args.data_dir) for s in args.splits})
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
