#!/usr/bin/env python3
"""Peak resident memory of training alone, measured as the JoeyNMT anchor measures its own.

The anchor (shared/anchors/joeynmt_g2p.py) reads ru_maxrss of the ``joeynmt train`` subprocess:
a fresh interpreter that imports torch, loads and tokenizes the data, builds the model and trains,
nothing else. This script is that process for attnkit: it takes speed.py's options, builds what
speed.py builds (``speed.build``: the same model, data, batches and seed) and runs the same warm-up
and timed updates, then prints one JSON line:

* ``train_peak_rss_mb``: its peak resident memory (VmHWM at the end), the figure comparable with
  the anchor's ``train_peak_rss_mb`` (the anchor's ru_maxrss of a child of its small launcher
  script is that child's own high-water mark);
* ``phases_mb``: VmRSS and the high-water mark VmHWM (/proc/self/status) after each phase, to see
  where the memory goes.

    python benchmarks/train_memory.py --updates 150      # alone
    python benchmarks/speed.py --updates 150              # speed.py runs it (see measure())

speed.py's decoding, matmul ceiling and comparisons never run here, so they cannot raise the figure.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent


def memory_mb() -> dict[str, float]:
    """VmRSS (resident now) and VmHWM (the peak so far) of this process, in MB."""
    fields = {}
    with open("/proc/self/status") as status:
        for line in status:
            name, _, value = line.partition(":")
            if name in ("VmRSS", "VmHWM"):
                fields[name] = round(int(value.split()[0]) / 1024, 1)  # kB
    return {"rss": fields.get("VmRSS", 0), "peak": fields.get("VmHWM", 0)}


def train_only(argv: list[str]) -> dict:
    """Train as ``speed.py argv`` trains (warm-up and timed updates), recording memory by phase."""
    phases = {"python": memory_mb()}
    import torch

    phases["torch_imported"] = memory_mb()
    sys.path.insert(0, str(HERE))
    import speed

    from attnkit.device import resolve_device
    from attnkit.training.optim import adam

    args = speed.parser().parse_args(argv)
    if args.threads:
        torch.set_num_threads(args.threads)
    device = resolve_device(args.device)
    _, _, _, model, batches = speed.build(args, device)
    phases["data_and_model_built"] = memory_mb()
    optimizer = adam(model.parameters(), 1e-3)
    model.train()
    updates = args.warmup + args.updates
    for i, batch in zip(range(updates), speed._cycle(batches)):
        speed._update(model, optimizer, batch.to(device))
        if i == 0:
            phases["first_update"] = memory_mb()
    phases[f"after_{updates}_updates"] = memory_mb()
    # VmHWM, not this process's ru_maxrss: Linux carries a forked child's pre-exec high-water mark
    # into ru_maxrss, so run from speed.py that would report speed.py's own peak
    return {
        "train_peak_rss_mb": phases[f"after_{updates}_updates"]["peak"],
        "updates": updates,
        "phases_mb": phases,
    }


def measure(argv: list[str]) -> dict:
    """Run this script on ``argv`` (speed.py's options) in a fresh process; its JSON, or
    ``{"error": ...}``."""
    proc = subprocess.run(
        [sys.executable, str(Path(__file__).resolve()), *argv], capture_output=True, text=True
    )
    if proc.returncode != 0:
        return {"error": proc.stderr.strip().splitlines()[-1:] or ["train_memory.py failed"]}
    return json.loads(proc.stdout.strip().splitlines()[-1])


if __name__ == "__main__":
    print(json.dumps(train_only(sys.argv[1:])))
