#!/usr/bin/env python3
"""Data-parallel training on the CPU: 2 processes x 1 thread (DDP under torchrun) against
1 process x 2 threads, for the same updates of the same model.

    python benchmarks/ddp_cpu.py --updates 60

The model and settings are configs/g2p_reference.yaml's (the JoeyNMT reference model,
batches of 128 words); the data is the first ``updates x 128`` words of CMUdict's train.txt
(one epoch of exactly ``--updates`` global batches) and 200 dev words, as TSV files of a
``parallel`` task. Each run is a real ``attnkit train``; the figures are the trainer's own
(``trainer.json``): target tokens per second of update time (evaluation and saving left
out), and the wall time of the whole command. Prints one JSON line.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[1]
DATA = REPO.parent / "shared" / "data" / "cmudict"
CONFIG = REPO / "configs" / "g2p_reference.yaml"


def _tsv(source: Path, target: Path, n: int) -> None:
    """The first ``n`` CMUdict lines ("WORD  PH ON ES") as "WORD<TAB>PH ON ES"."""
    rows = []
    with source.open(encoding="latin-1") as lines:
        for line in lines:
            word, _, phones = line.strip().partition("  ")
            if word and phones:
                rows.append(f"{word}\t{phones}\n")
            if len(rows) == n:
                break
    target.write_text("".join(rows), encoding="utf-8")


def _config(tmp: Path, args) -> Path:
    cfg = yaml.safe_load(CONFIG.read_text(encoding="utf-8"))
    _tsv(args.data / "train.txt", tmp / "train.tsv", args.updates * args.batch_size)
    _tsv(args.data / "dev.txt", tmp / "dev.tsv", 200)
    keep = ("src_level", "tgt_level", "lowercase", "max_src_len", "max_tgt_len", "overlong")
    cfg["data"] = {
        "task": "parallel",
        "train": str(tmp / "train.tsv"),
        "dev": str(tmp / "dev.tsv"),
        "test": str(tmp / "dev.tsv"),
        **{k: cfg["data"][k] for k in keep},
    }
    cfg["train"].update(
        {
            "epochs": 1,
            "batch_size": args.batch_size,
            "eval_every": 0,
            "max_minutes": None,
            "progress": False,
            "average_checkpoints": 0,
        }
    )
    path = tmp / "ddp_cpu.yaml"
    path.write_text(yaml.safe_dump(cfg), encoding="utf-8")
    return path


def _run(config: Path, out: Path, processes: int, threads: int) -> dict:
    command = [
        "attnkit",
        "train",
        str(config),
        "--output-dir",
        str(out),
        "--set",
        f"train.threads={threads}",
    ]
    if processes == 1:
        command = [sys.executable, "-m", *command]
    else:
        command = [
            sys.executable,
            "-m",
            "torch.distributed.run",
            "--standalone",
            "--nproc_per_node",
            str(processes),
            "-m",
            *command,
        ]
    env = dict(os.environ, OMP_NUM_THREADS=str(threads))
    t = time.perf_counter()
    done = subprocess.run(command, env=env, capture_output=True, text=True)
    wall = time.perf_counter() - t
    if done.returncode:
        sys.exit(f"ddp_cpu.py: {' '.join(command)} failed:\n{done.stderr[-3000:]}")
    state = json.loads((out / "last" / "trainer.json").read_text())["state"]
    return {
        "updates": state["step"],
        "train_s": round(state["train_s"], 2),
        "train_tokens_per_s": round(state["tokens"] / state["train_s"], 1),
        "wall_s": round(wall, 1),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--updates", type=int, default=60, help="global batches (one epoch)")
    ap.add_argument("--batch-size", type=int, default=128, help="words per global batch")
    ap.add_argument(
        "--data", type=Path, default=DATA, help="CMUdict directory (train.txt, dev.txt)"
    )
    args = ap.parse_args()
    if not (args.data / "train.txt").is_file():
        sys.exit(f"ddp_cpu.py: {args.data}/train.txt not found (see shared/data/README.md)")
    with tempfile.TemporaryDirectory(prefix="ddp-cpu-") as tmp:
        tmp = Path(tmp)
        config = _config(tmp, args)
        one = _run(config, tmp / "one", processes=1, threads=2)
        two = _run(config, tmp / "two", processes=2, threads=1)
    print(
        json.dumps(
            {
                "benchmark": "ddp_cpu",
                "config": "configs/g2p_reference.yaml",
                "updates": args.updates,
                "batch_size": args.batch_size,
                "cpu_count": os.cpu_count(),
                "one_process_two_threads": one,
                "two_processes_one_thread": two,
                "speedup": round(two["train_tokens_per_s"] / one["train_tokens_per_s"], 3),
            }
        )
    )


if __name__ == "__main__":
    main()
