#!/usr/bin/env python3
"""Why capturing every layer's map costs what it costs: one BERT-base attention layer (batch 1,
12 heads of width 64) on T tokens, its parts timed alone. Prints ONE JSON object.

    python benchmarks/capture_floor.py --threads 1                 # T = 2,048
    python benchmarks/capture_floor.py --threads 1 --length 512 --repeats 5

The parts, each the median of ``--repeats`` runs after one warm-up:

* ``sdpa``: ``F.scaled_dot_product_attention(q, k, v)``, the fused kernel the model runs;
* ``recompute``: what ``attnkit.capture`` adds for the layer: its (1, 12, T, T) weights
  recomputed block by block (``weight_chunks``) into a map that is kept;
* ``scores_written``: ``q @ k^T`` alone, written into a (1, 12, T, T) buffer already touched;
* ``softmax_written``: a softmax over that buffer, in place;
* ``weights_times_values``: ``W @ v``, what a layer computing from its kept map would add;
* ``fresh_map``: allocating a new (1, 12, T, T) float32 map and writing zeros into it (the
  memory a kept map must be given, page by page).

``floor_vs_sdpa``: ``scores_written`` over ``sdpa``: any capture that materialises the map pays
at least the score product written out, so every layer's map costs at least this much on top of
the forward's own attention, whatever the method.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))  # machine_info beside this script
from machine_info import describe  # noqa: E402


def median_time(run, repeats: int) -> float:
    """The median seconds of ``repeats`` calls of ``run()`` after one warm-up call."""
    run()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
    return round(statistics.median(times), 6)


def measure(length: int, repeats: int) -> dict:
    import torch
    import torch.nn.functional as F

    from attnkit.explain.capture.weights import sdpa_call, weight_chunks

    torch.manual_seed(0)
    q, k, v = (torch.randn(1, 12, length, 64) for _ in range(3))
    buffer = torch.zeros(1, 12, length, length)  # touched once: no page faults in the timings

    def recompute():
        kept = torch.empty(1, 12, length, length)
        for _ in weight_chunks(sdpa_call(q, k, v), into=kept):
            pass

    parts = {
        "sdpa": lambda: F.scaled_dot_product_attention(q, k, v),
        "recompute": recompute,
        "scores_written": lambda: torch.matmul(q, k.transpose(-2, -1), out=buffer),
        "softmax_written": lambda: torch.softmax(buffer, dim=-1, out=buffer),
        "weights_times_values": lambda: buffer @ v,
        "fresh_map": lambda: torch.empty(1, 12, length, length).zero_(),
    }
    times = {name: median_time(run, repeats) for name, run in parts.items()}
    return {
        "time_s": times,
        "floor_vs_sdpa": round(times["scores_written"] / times["sdpa"], 3),
        "recompute_vs_sdpa": round(times["recompute"] / times["sdpa"], 3),
    }


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--length", type=int, default=2048, help="tokens T (default 2,048)")
    ap.add_argument("--repeats", type=int, default=3, help="timed runs of each part")
    ap.add_argument("--threads", type=int, default=0, help="torch CPU threads (0 = default)")
    args = ap.parse_args()
    if args.length < 1 or args.repeats < 1 or args.threads < 0:
        ap.error("--length and --repeats must be at least 1, --threads at least 0")
    import os

    import torch

    if args.threads:
        torch.set_num_threads(args.threads)
    out = {
        "benchmark": "capture_floor",
        "length": args.length,
        "heads": 12,
        "head_width": 64,
        "threads": torch.get_num_threads(),
        "load_average": list(os.getloadavg()),
        "machine": describe(),
        **measure(args.length, args.repeats),
    }
    print(json.dumps(out))


if __name__ == "__main__":
    main()
