#!/usr/bin/env python3
"""Whole `attnkit translate` commands on 1 thread and on more, alternating, for the --threads
default.

    python benchmarks/decode_threads.py --model runs/demo/model/best --lines 2000 --rounds 3

Feeds LINES number words (drawn from the numbers task with a fixed seed) on standard input to
`python -m attnkit translate --threads N`, greedy and with beam 5, for each N in --threads,
alternating the thread counts ROUNDS times, and prints one JSON line with every wall time and
their medians. Start-up and model loading are included: that is what a user waits for.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))  # machine_info beside this script
from machine_info import one_line  # noqa: E402

from attnkit.data.tasks.numbers import make_pairs  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument(
        "--model", type=Path, required=True, help="a seq2seq checkpoint of the numbers task"
    )
    ap.add_argument("--lines", type=int, default=2000)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    args = ap.parse_args()
    rng = random.Random(0)
    sources = [src for src, _ in make_pairs()]
    text = "\n".join(rng.choice(sources) for _ in range(args.lines)) + "\n"
    env = {k: v for k, v in os.environ.items() if k != "OMP_NUM_THREADS"}
    times: dict[str, list[float]] = {}
    for _ in range(args.rounds):
        for beam in (1, 5):
            for threads in args.threads:
                cmd = [
                    sys.executable,
                    "-m",
                    "attnkit",
                    "translate",
                    "--model",
                    str(args.model),
                    "-",
                    "--beam",
                    str(beam),
                    "--threads",
                    str(threads),
                ]
                t0 = time.perf_counter()
                done = subprocess.run(cmd, input=text, capture_output=True, text=True, env=env)
                wall = time.perf_counter() - t0
                if done.returncode != 0 or len(done.stdout.splitlines()) != args.lines:
                    sys.exit(f"translate failed: {done.stderr.strip()[-500:]}")
                times.setdefault(f"beam{beam}_threads{threads}", []).append(round(wall, 2))
    print(
        json.dumps(
            {
                "lines": args.lines,
                "rounds": args.rounds,
                "wall_s": times,
                "median_s": {k: statistics.median(v) for k, v in times.items()},
                "load_avg_1min": round(os.getloadavg()[0], 2),
                "machine": one_line(),
            }
        )
    )


if __name__ == "__main__":
    main()
