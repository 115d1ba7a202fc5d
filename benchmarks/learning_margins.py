#!/usr/bin/env python3
"""The margins of the unit learning tests, over seeds and both of torch's x86 kernel sets.

    python benchmarks/learning_margins.py --seeds 0-5 --pooling-steps 25 40

Each test in tests/unit/test_visual_models.py that asserts learning (the digit-string reader, RAM
and the attention-pooling classifier) is run on every seed, once with torch's default kernels
(AVX-512 where the CPU has it) and once with ``ATEN_CPU_CAPABILITY=avx2``, and the ratio it asserts
on is printed: one JSON line per kernel set, then a summary line with each ratio's worst case next
to the bound the test uses. The bounds must hold with a margin at the worst case.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]


def seed_range(text: str) -> list[int]:
    first, _, last = text.partition("-")
    return list(range(int(first), int(last or first) + 1))


def ratios(seeds: list[int], pooling_steps: list[int]) -> dict:
    """Run in this process: {test: {seed: ratio}} for the kernels torch picked here."""
    sys.path.insert(0, str(REPO / "tests" / "unit"))
    import test_visual_models as t
    import torch

    torch.set_num_threads(1)
    out: dict = {"capability": torch.backends.cpu.get_cpu_capability(), "reader": {}, "ram": {}}
    for seed in seeds:
        losses = t.reader_losses(seed)
        out["reader"][seed] = round(losses[-1] / losses[0], 4)
        losses = t.ram_losses(seed)
        out["ram"][seed] = round(float(np.mean(losses[-5:]) / np.mean(losses[:5])), 4)
        for steps in pooling_steps:
            losses = t.pooling_losses(seed, steps)
            out.setdefault(f"pooling_{steps}", {})[seed] = round(losses[-1] / losses[0], 4)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--seeds", default="0-5", help="seed range, e.g. 0-5 (default)")
    ap.add_argument(
        "--pooling-steps", type=int, nargs="+", default=[25], help="attention-pooling run lengths"
    )
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    seeds = seed_range(args.seeds)
    if args.worker:
        print(json.dumps(ratios(seeds, args.pooling_steps)))
        return
    runs = []
    for capability in (None, "avx2"):
        env = dict(os.environ, OMP_NUM_THREADS="1")
        env.pop("ATEN_CPU_CAPABILITY", None)
        if capability:
            env["ATEN_CPU_CAPABILITY"] = capability
        cmd = [
            sys.executable,
            __file__,
            "--worker",
            "--seeds",
            args.seeds,
            "--pooling-steps",
            *map(str, args.pooling_steps),
        ]
        line = subprocess.run(
            cmd, env=env, check=True, capture_output=True, text=True
        ).stdout.strip()
        print(line, flush=True)
        runs.append(json.loads(line))
    sys.path.insert(0, str(REPO / "tests" / "unit"))
    import test_visual_models as t

    bounds = {"reader": t.READER_RATIO, "ram": t.RAM_RATIO}
    bounds.update({f"pooling_{s}": t.POOLING_RATIO for s in args.pooling_steps})
    summary = {
        name: {"worst": max(v for run in runs for v in run[name].values()), "bound": bound}
        for name, bound in bounds.items()
    }
    print(
        json.dumps(
            {"seeds": seeds, "capabilities": [r["capability"] for r in runs], "summary": summary}
        )
    )


if __name__ == "__main__":
    main()
