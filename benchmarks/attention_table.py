#!/usr/bin/env python3
"""Train and evaluate a set of experiment configs, one subprocess each, and tabulate them.

    python benchmarks/attention_table.py configs/numbers_*.yaml configs/dates_*.yaml \
        --jobs 2 --set train.threads=1

Each config is trained with ``attnkit train`` (checkpoints under --runs), then
``attnkit evaluate`` scores its best checkpoint on the test split greedily and
with beam search. Prints one JSON line per config and, at the end, a Markdown
table (for docs/RESULTS.md) with the machine it ran on.
"""

from __future__ import annotations

import argparse
import concurrent.futures as cf
import json
import os
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))  # machine_info beside this script
from machine_info import one_line  # noqa: E402


def run_one(config: Path, runs: Path, overrides: list[str], beam: int) -> dict:
    name = config.stem
    out = runs / name
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    sets = [x for o in overrides for x in ("--set", o)]
    t0 = time.time()
    with open(runs / f"{name}.log", "w") as log:
        train = subprocess.run(
            [
                sys.executable,
                "-m",
                "attnkit",
                "train",
                str(config),
                "--output-dir",
                str(out),
                "--overwrite",
                "--set",
                "train.progress=false",
                *sets,
            ],
            stdout=log,
            stderr=subprocess.STDOUT,
            env=env,
        )
        if train.returncode != 0:
            return {
                "config": str(config),
                "error": f"train exited {train.returncode}, see {runs / (name + '.log')}",
            }
        wall = time.time() - t0
        ev = subprocess.run(
            [
                sys.executable,
                "-m",
                "attnkit",
                "evaluate",
                "--model",
                str(out / "best"),
                "--beam",
                str(beam),
                "--out",
                str(out / "eval-test"),
                "--json",
            ],
            stdout=subprocess.PIPE,
            stderr=log,
            env=env,
            text=True,
        )
    if ev.returncode != 0:
        return {"config": str(config), "error": f"evaluate exited {ev.returncode}"}
    scores = json.loads((out / "eval-test" / "scores.json").read_text(encoding="utf-8"))
    state = json.loads((out / "best" / "trainer.json").read_text())["state"]
    last = json.loads((out / "last" / "trainer.json").read_text())["state"]
    return {
        "config": str(config),
        "attention": scores["attention"],
        "task": scores["task"],
        "greedy": scores["greedy"],
        f"beam{beam}": scores.get(f"beam{beam}"),
        "alignment": scores.get("alignment"),  # tasks with gold links: numbers, dates
        "train_minutes": round(last["elapsed_s"] / 60, 2),
        "wall_minutes": round(wall / 60, 2),
        "updates": last["step"],
        "best_update": state["best_step"],
        "overrides": overrides,
    }


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("configs", nargs="+", type=Path)
    ap.add_argument(
        "--runs", type=Path, default=Path("runs/table"), help="where checkpoints and logs go"
    )
    ap.add_argument("--jobs", type=int, default=1, help="configs trained at the same time")
    ap.add_argument("--beam", type=int, default=5)
    ap.add_argument(
        "--set",
        dest="overrides",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="override applied to every config (repeatable)",
    )
    args = ap.parse_args()
    args.runs.mkdir(parents=True, exist_ok=True)
    where = one_line()
    rows = []
    with cf.ThreadPoolExecutor(args.jobs) as pool:
        futures = {
            pool.submit(run_one, c, args.runs, args.overrides, args.beam): c for c in args.configs
        }
        for fut in cf.as_completed(futures):
            row = {**fut.result(), "machine": where}
            rows.append(row)
            print(json.dumps(row), flush=True)
    metric = "exact_match"
    print(
        f"\n| task | attention | test exact match, greedy | beam {args.beam} | train min | updates "
        "| machine |"
    )
    print("|---|---|---|---|---|---|---|")
    for r in sorted(rows, key=lambda r: r["config"]):
        if "error" in r:
            print(f"| {r['config']} | error: {r['error']} | | | | | |")
            continue
        beam = r.get(f"beam{args.beam}") or {}
        print(
            f"| {r['task']} | {r['attention']} | {r['greedy'].get(metric)} | {beam.get(metric)} | "
            f"{r['train_minutes']} | {r['updates']} | {r['machine']} |"
        )
    print_alignment_table(rows)


def print_alignment_table(rows: list[dict]) -> None:
    """Attention against gold links (teacher-forced on every test reference, and on the model's
    own correct outputs), for the configs whose task has them."""
    scored = [r for r in rows if r.get("alignment")]
    if not scored:
        return
    print(
        "\n| task | attention | exact match | AER (forced) | argmax in span (forced) | "
        "entropy 0-1 (forced) | unattended % (forced) | AER (own correct) |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for r in sorted(scored, key=lambda r: r["config"]):
        forced, own = r["alignment"]["teacher_forced"], r["alignment"]["own_output"]
        print(
            f"| {r['task']} | {r['attention']} | {r['greedy'].get('exact_match')} | "
            f"{forced.get('aer')} | {forced.get('argmax_in_span')} | "
            f"{forced.get('entropy_normalised')} | {forced.get('unattended_pct')} | "
            f"{own.get('aer')} |"
        )


if __name__ == "__main__":
    main()
