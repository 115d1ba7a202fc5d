#!/usr/bin/env python3
"""``train.precision``: float32 against bfloat16 autocast, the same runs otherwise.

    python benchmarks/precision.py --json docs/results/precision_cpu.json --runs /tmp/precision
    python benchmarks/precision.py --configs configs/numbers_transformer.yaml --seeds 1 --epochs 2

For every config, seed and precision (in that order), one ``attnkit train`` process with
``train.precision=P``, ``train.seed=S``, ``train.threads=1``, a fixed number of epochs
(``--epochs``; no time budget, no early stopping: ``train.max_minutes=null``, a patience longer
than the run), then ``attnkit evaluate --beam 1`` of its best checkpoint on the test split. The
two precisions of one config and seed therefore see the same data, batches and initial weights;
only the training forward's dtype differs (decoding is float32 in both). The runs go one after
the other, so each has the CPU time the machine leaves it.

The data are made small by default (``--set`` adds or overrides keys after these):
``data.languages=[en,de]`` (1,600 training pairs: 50 updates an epoch), 100 warm-up updates,
``train.backend=fused`` for both precisions (bf16 cannot use the RNN's native float32 kernels,
so fp32 on its default backend would compare two backends, not two precisions).

Prints ONE JSON line (and writes it to ``--json``): per run the test exact match (greedy), the
best dev score and its update, updates, epochs, the seconds spent in updates (the trainer's own
count, dev evaluations excluded), target tokens/s over those seconds, the load average before
and after; per config and precision the mean over seeds; and the machine. On a shared machine
the seconds are indicative only.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))  # machine_info beside this script
from machine_info import describe  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
SHARED_DATA = ROOT.parent / "shared" / "data"
CONFIGS = ("configs/numbers_transformer.yaml", "configs/numbers_bahdanau.yaml")
PRECISIONS = ("fp32", "bf16", "fp16")
#: small enough that both configs, two precisions and two seeds take minutes on one thread
#: backend fused for both precisions: bf16 trains the RNN on the autograd path (the native fp32
#: kernels have no bf16), so this compares the precision, not two backends
SMALL = (
    "data.languages=[en,de]",
    "train.warmup_steps=100",
    "train.backend=fused",
    "train.tensorboard=false",
)


def load_average() -> list[float]:
    """The 1, 5 and 15 minute load averages (``/proc/loadavg``); [] where there is none."""
    try:
        return [float(x) for x in Path("/proc/loadavg").read_text().split()[:3]]
    except (OSError, ValueError):
        return []


def _attnkit(args: list[str], log) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONUNBUFFERED="1", OMP_NUM_THREADS="1")
    return subprocess.run(
        [sys.executable, "-m", "attnkit", *args],
        env=env,
        text=True,
        stdout=subprocess.PIPE,
        stderr=log,
    )


def _state(directory: Path) -> dict:
    return json.loads((directory / "trainer.json").read_text(encoding="utf-8"))["state"]


def run_one(config: Path, precision: str, seed: int, args) -> dict:
    """Train ``config`` in ``precision`` with ``seed``, score its best checkpoint greedily on
    test: the run's JSON (or ``{"error": ...}``)."""
    run = args.runs / f"{config.stem}-{precision}-seed{seed}"
    sets = [
        *SMALL,
        *args.set,
        f"train.precision={precision}",
        f"train.seed={seed}",
        f"train.epochs={args.epochs}",
        "train.max_minutes=null",
        f"train.patience={args.epochs + 1}",
        "train.threads=1",
        "train.progress=false",
    ]
    load_before = load_average()
    run.parent.mkdir(parents=True, exist_ok=True)
    with open(run.parent / f"{run.name}.log", "w", encoding="utf-8") as log:
        train = ["train", str(config), "--output-dir", str(run), "--overwrite"]
        done = _attnkit([*train, *(x for s in sets for x in ("--set", s))], log)
        if done.returncode != 0:
            return {"error": f"attnkit train exited {done.returncode}, see {log.name}"}
        evaluate = ["evaluate", "--model", str(run / "best"), "--beam", "1", "--json"]
        scored = _attnkit([*evaluate, "--threads", "1", "--out", str(run / "eval-test")], log)
        if scored.returncode != 0:
            return {"error": f"attnkit evaluate exited {scored.returncode}, see {log.name}"}
    greedy = json.loads(scored.stdout.strip().splitlines()[-1])["greedy"]
    last, best = _state(run / "last"), _state(run / "best")
    train_s = last.get("train_s") or 0.0
    return {
        "test_exact_match": greedy.get("exact_match"),
        "dev_best": best["best"],
        "dev_best_update": best["best_step"],
        "updates": last["step"],
        "epochs": last["epoch"],
        "train_update_s": round(train_s, 1),
        "train_target_tokens": last.get("tokens"),
        "tokens_per_s": round(last["tokens"] / train_s, 1) if train_s else None,
        "load_before": load_before,
        "load_after": load_average(),
    }


def summary(runs: list[dict]) -> dict:
    """Per precision: the mean over seeds of test exact match, dev best, seconds and tokens/s."""
    out = {}
    for precision in dict.fromkeys(r["precision"] for r in runs if "error" not in r):
        mine = [r for r in runs if r.get("precision") == precision and "error" not in r]
        out[precision] = {
            key: round(sum(r[key] for r in mine) / len(mine), 2)
            for key in ("test_exact_match", "dev_best", "train_update_s", "tokens_per_s")
        }
        out[precision]["seeds"] = [r["seed"] for r in mine]
    return out


def _ints(text: str) -> list[int]:
    try:
        values = [int(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected comma-separated integers, got {text!r}"
        ) from None
    if not values or len(set(values)) < len(values):
        raise argparse.ArgumentTypeError(f"give each seed once, at least one: {text!r}")
    return values


def _precisions(text: str) -> list[str]:
    values = [x.strip() for x in text.split(",") if x.strip()]
    bad = [x for x in values if x not in PRECISIONS]
    if bad or not values:
        raise argparse.ArgumentTypeError(f"{bad or text!r}: each one of {', '.join(PRECISIONS)}")
    return values


def parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--configs", nargs="+", type=Path, default=[Path(c) for c in CONFIGS])
    ap.add_argument("--precisions", type=_precisions, default=["fp32", "bf16"], help="fp32,bf16")
    ap.add_argument("--seeds", type=_ints, default=[1, 2], help="train.seed values (1,2)")
    ap.add_argument("--epochs", type=int, default=10, help="epochs of every run (10)")
    ap.add_argument("--runs", type=Path, default=Path("runs/precision"), help="run directories")
    ap.add_argument("--json", type=Path, default=None, help="also write the JSON here")
    ap.add_argument(
        "--set", action="append", default=[], metavar="KEY=VALUE", help="applied to every run"
    )
    return ap


def main(argv: list[str] | None = None) -> None:
    ap = parser()
    args = ap.parse_args(argv)
    if args.epochs < 1:
        ap.error(f"--epochs must be at least 1, got {args.epochs}")
    for path in args.configs:
        if not path.is_file():
            ap.error(f"--configs: {path}: no such experiment file")
    if not os.environ.get("ATTNKIT_DATA_DIR", "").strip() and SHARED_DATA.is_dir():
        os.environ["ATTNKIT_DATA_DIR"] = str(SHARED_DATA)  # inherited by every attnkit process
    result = {
        "epochs": args.epochs,
        "overrides": [*SMALL, *args.set],
        "threads": 1,
        "machine": describe(),
        "load_start": load_average(),
        "configs": {},
    }
    for config in args.configs:
        runs = [
            {
                "config": str(config),
                "precision": precision,
                "seed": seed,
                **run_one(config, precision, seed, args),
            }
            for seed in args.seeds
            for precision in args.precisions
        ]
        result["configs"][config.stem] = {"runs": runs, "mean": summary(runs)}
    result["load_end"] = load_average()
    text = json.dumps(result)
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(text + "\n", encoding="utf-8")
    print(text, flush=True)
    failed = [r for c in result["configs"].values() for r in c["runs"] if "error" in r]
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
