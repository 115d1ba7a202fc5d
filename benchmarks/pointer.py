#!/usr/bin/env python3
"""Train and score pointer networks (Vinyals et al. 2015) on their generated tasks; JSON out.

    python benchmarks/pointer.py --minutes 6 --out docs/results/pointer_cpu.json

Each config (default: sorting n=10, convex hull n=10 and 20, TSP n=5 and 10) is trained with
``attnkit train`` (one thread, ``train.max_minutes`` = --minutes unless --minutes-of says
otherwise for it), then its best checkpoint is scored on the 1,000 test instances greedily and
with beam search (--beam). One JSON line per config, each beside the paper's figure and the
target, then the whole list written to --out with the machine it ran on.

Vinyals et al. (NIPS 2015): convex hull n = 50 exact 72.6%;
TSP mean tour n = 5: 2.12 (optimal 2.12), n = 10: 2.88 (optimal 2.87). Targets here: sorting
n = 10 exact >= 99%, TSP n = 10 mean tour <= 2.90.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).resolve().parent))  # machine_info beside this script
from machine_info import one_line  # noqa: E402

from attnkit.training.state import read_state  # noqa: E402

#: config -> (the paper's figure, the target of this benchmark), both as text
ANCHORS = {
    "pointer_sort10": (
        "not a task of the paper",
        "exact >= 99%",
    ),
    "pointer_hull10": ("Ptr-Net at n=50: 72.6% exact", "report"),
    "pointer_hull20": ("Ptr-Net at n=50: 72.6% exact", "report"),
    "pointer_hull50": ("Ptr-Net 72.6% exact; seq2seq with attention 38.9%", "report"),
    "pointer_tsp5": ("Ptr-Net 2.12, optimal 2.12", "report"),
    "pointer_tsp10": ("Ptr-Net 2.88, optimal 2.87", "mean tour <= 2.90"),
}
#: the configs run when none is named (n = 50 hulls only on request: an accelerator's budget)
DEFAULT = [ROOT / "configs" / f"{name}.yaml" for name in ANCHORS if name != "pointer_hull50"]


def run_one(
    config: Path, runs: Path, minutes: float, beam: int, extra: list[str], device: str = "cpu"
) -> dict:
    name = config.stem
    out = runs / name
    sets = ["train.threads=1", f"train.max_minutes={minutes}", "train.progress=false", *extra]
    began = time.time()
    with open(runs / f"{name}.log", "w") as log:
        train = subprocess.run(
            [sys.executable, "-m", "attnkit", "train", str(config), "--output-dir", str(out)]
            + ["--overwrite"]
            + [x for s in sets for x in ("--set", s)],
            stdout=log,
            stderr=subprocess.STDOUT,
            env=dict(os.environ, PYTHONUNBUFFERED="1", OMP_NUM_THREADS="1"),
        )
    wall = time.time() - began
    if train.returncode != 0:
        return {"config": name, "error": f"train exited {train.returncode}; see {log.name}"}
    import torch

    import attnkit

    torch.set_num_threads(1)
    model = attnkit.load(out / "best", device)
    scores = model.evaluate("test", beam=beam).to_dict()
    state = read_state(out / "last")
    paper, target = ANCHORS.get(name, ("", ""))
    return {
        "config": name,
        "task": scores["task"],
        "points": scores["points"],
        "greedy": scores["greedy"],
        f"beam{beam}": scores.get(f"beam{beam}"),
        "train_minutes": round(state.elapsed_s / 60, 2),
        "wall_minutes_with_data": round(wall / 60, 2),
        "updates": state.step,
        "epochs": state.epoch,
        "stopped": state.stopped,
        "paper": paper,
        "target": target,
        "overrides": sets,
    }


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("configs", nargs="*", type=Path, default=DEFAULT)
    ap.add_argument("--runs", type=Path, default=Path("runs/pointer_bench"))
    ap.add_argument("--minutes", type=float, default=6.0, help="training budget per config")
    ap.add_argument(
        "--minutes-of",
        action="append",
        default=[],
        metavar="NAME=MINUTES",
        help="another budget for one config, e.g. pointer_tsp5=4 (repeatable)",
    )
    ap.add_argument("--beam", type=int, default=5)
    ap.add_argument("--set", dest="extra", action="append", default=[], metavar="KEY=VALUE")
    ap.add_argument("--out", type=Path, default=None, help="write every row here as JSON")
    ap.add_argument("--device", default="cpu", help="where the test set is scored (cpu, cuda)")
    args = ap.parse_args()
    args.runs.mkdir(parents=True, exist_ok=True)
    budgets = {k: float(v) for k, v in (item.split("=", 1) for item in args.minutes_of)}
    where, rows = one_line(), []
    for config in args.configs:
        minutes = budgets.get(config.stem, args.minutes)
        row = {
            **run_one(config, args.runs, minutes, args.beam, args.extra, args.device),
            "machine": where,
        }
        rows.append(row)
        print(json.dumps(row), flush=True)
        if args.out is not None:  # after every config: a cut-short run keeps what it has
            args.out.write_text(json.dumps(rows, indent=1) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
