#!/usr/bin/env python3
"""How long ``attnkit explain`` of one input takes, model load included: whole commands, and the
work inside one process stage by stage.

    python benchmarks/explain_speed.py --model runs/demo/model/best
    python benchmarks/explain_speed.py --model runs/demo/model/best --rounds 7 --text elf

For each saliency method, ROUNDS times in alternation:

* ``command_s``: the wall time of ``python -m attnkit explain --model M TEXT -o FILE --method X``
  as a user types it: interpreter start, imports (torch, captum, matplotlib), loading the
  checkpoint, decoding, forcing, saliency, drawing and writing the PNG;
* ``in_process_s``: the same call (``explain_model(..., picture=FILE)``) timed inside a fresh
  process once its imports are done, cold: it loads the checkpoint from disk, decodes, forces,
  computes the saliency, scores and draws;
* ``stages_s``: the same work done stage by stage in another fresh process, also cold, each
  stage timed (load, decode, force, saliency, draw; ``stages_total_s`` is their sum, which
  leaves out the scores);
* ``imports_s``: what the timing process spent importing before the call (torch, captum,
  matplotlib, attnkit).

Prints one JSON object: medians and every round's times, the machine, the threads (1, the
command's default) and the target (1 s for one input, model load included).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))  # machine_info beside this script
from machine_info import describe  # noqa: E402

from attnkit.explain.saliency import METHODS  # noqa: E402

TARGET_S = 1.0

# Run in a fresh interpreter: imports first (timed apart), then one cold pass, either the whole
# call (argv[5] == "whole") or its stages one by one.
IN_PROCESS = r"""
import json, sys, time
t0 = time.perf_counter()
import torch
from attnkit.device import set_threads
from attnkit.explain.no_attention import saliency_translations
from attnkit.families.seq2seq.explain_report import _draw, explain_model
from attnkit.families.seq2seq.translator import Translator
set_threads(1)
imports = time.perf_counter() - t0
model, text, method, picture, mode = sys.argv[1:6]
if mode == "whole":
    t0 = time.perf_counter()
    explain_model(model, texts=[text], method=method, picture=picture)
    print(json.dumps({"imports_s": imports, "in_process_s": time.perf_counter() - t0}))
    sys.exit()
stages, t = {}, time.perf_counter()
def lap(name):
    global t
    now = time.perf_counter()
    stages[name] = now - t
    t = now
translator = Translator.load(model, "auto"); lap("load")
(out,) = translator.translate([text]); lap("decode")
forced = translator.teacher_forced([text], [out.output]); lap("force")
saliency = saliency_translations(translator, forced, method); lap("saliency")
_draw(forced[0].record(), saliency[0].record(), picture, method, translator.model.has_attention)
lap("draw")
print(json.dumps({"stages_s": stages}))
"""


def _command(model: Path, text: str, method: str, picture: Path, env: dict) -> float:
    cmd = [sys.executable, "-m", "attnkit", "explain", "--model", str(model), text]
    t0 = time.perf_counter()
    done = subprocess.run(
        [*cmd, "-o", str(picture), "--method", method], env=env, capture_output=True, text=True
    )
    wall = time.perf_counter() - t0
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed: {done.stderr.strip()}")
    return wall


def _in_process(model: Path, text: str, method: str, picture: Path, env: dict, mode: str) -> dict:
    """One cold pass in a fresh process: the whole call (``mode`` "whole") or its stages."""
    done = subprocess.run(
        [sys.executable, "-c", IN_PROCESS, str(model), text, method, str(picture), mode],
        env=env,
        capture_output=True,
        text=True,
    )
    if done.returncode != 0:
        raise SystemExit(f"the in-process timing failed: {done.stderr.strip()[-2000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def summary(runs: dict) -> dict:
    """Medians and every round's times of one method."""
    whole, staged = runs["whole"], runs["stages"]
    names = list(staged[0]["stages_s"])
    median = statistics.median
    return {
        "command_s_median": round(median(runs["command_s"]), 3),
        "in_process_s_median": round(median(x["in_process_s"] for x in whole), 3),
        "imports_s_median": round(median(x["imports_s"] for x in whole), 3),
        "stages_s_median": {k: round(median(x["stages_s"][k] for x in staged), 4) for k in names},
        "stages_total_s_median": round(median(sum(x["stages_s"].values()) for x in staged), 3),
        "command_s": runs["command_s"],
        "in_process_s": [round(x["in_process_s"], 4) for x in whole],
        "stages_total_s": [round(sum(x["stages_s"].values()), 4) for x in staged],
    }


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--model", type=Path, required=True, help="a seq2seq checkpoint directory")
    ap.add_argument("--text", default="siebenundneunzig", help="the input to explain")
    ap.add_argument("--rounds", type=int, default=5, help="times each measurement is repeated")
    ap.add_argument("--methods", nargs="+", default=list(METHODS), choices=METHODS)
    args = ap.parse_args()
    if args.rounds < 1:
        ap.error("--rounds must be at least 1")
    env = {k: v for k, v in os.environ.items() if k != "OMP_NUM_THREADS"}  # 1 thread: default
    runs = {method: {"command_s": [], "whole": [], "stages": []} for method in args.methods}
    with tempfile.TemporaryDirectory() as tmp:
        picture = Path(tmp) / "explained.png"
        for _ in range(args.rounds):
            for method in args.methods:
                where = (args.model, args.text, method, picture, env)
                runs[method]["command_s"].append(round(_command(*where), 4))
                for mode in ("whole", "stages"):
                    runs[method][mode].append(_in_process(*where, mode))
    results = {method: summary(r) for method, r in runs.items()}
    report = {
        "command": " ".join([Path(sys.argv[0]).name, *sys.argv[1:]]),
        "model": str(args.model),
        "text": args.text,
        "rounds": args.rounds,
        "threads": 1,
        "target_s": TARGET_S,
        "machine": describe(),
        "load_average": os.getloadavg(),
        "results": results,
    }
    print(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
