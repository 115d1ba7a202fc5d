"""Quality benchmark of the visual attention family: train, evaluate on the test set, print JSON.

    python benchmarks/vision.py --config configs/ram_mnist28.yaml [--set k=v ...] [--device cuda]
    python benchmarks/vision.py --all --max-minutes 1.5           # the five configs in sequence

One JSON line per config on stdout::

    {"config": "ram_mnist28", "model": "ram", "task": "mnist", "error_pct": 1.15,
     "target_error_pct": 1.2, "meets_target": true, "train_wall_s": 478.2,
     "device": "cuda (NVIDIA H100 ...)", "epochs": 180, ...}

``--max-minutes`` sets ``train.max_minutes`` (the training budget of each
run; the LR schedule is fitted to it), so a command with a wall-clock limit
can plan: budget per run + about half a minute for data and the test set.
MNIST is read from ``data.directory`` when given, else ``$ATTNKIT_DATA_DIR/mnist``; when that
variable is unset it is set to ``../shared/data`` next to the repository (or ``shared/data`` inside
it) where that holds ``mnist/``, else the user cache is used (docs/USAGE.md, "Data"). A failing
run prints a JSON line with ``"error"`` and the others still run; the exit status is 1
if any failed.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
import traceback
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "src"))

import torch  # noqa: E402

from attnkit.config import apply_overrides, read_yaml  # noqa: E402
from attnkit.device import resolve_device  # noqa: E402
from attnkit.families.vision.evaluate import evaluate_vision  # noqa: E402
from attnkit.families.vision.train import train_vision  # noqa: E402
from attnkit.training.state import read_state  # noqa: E402

ALL = (
    "ram_mnist28",
    "ram_translated60",
    "ram_cluttered60",
    "sat_multidigit",
    "attnpool_cluttered60",
)

#: test error (%) each config should reach (Mnih et al. 2014 for RAM; 98 % whole-string accuracy for
#: strips)
TARGETS = {
    "ram_mnist28": 1.2,
    "ram_translated60": 1.3,
    "ram_cluttered60": 4.1,
    "sat_multidigit": 2.0,
}


def device_name(device: str) -> str:
    resolved = resolve_device(device)
    if resolved.type == "cuda":
        return f"cuda ({torch.cuda.get_device_name(resolved.index or 0)})"
    return f"cpu ({torch.get_num_threads()} threads)"


def use_shared_data() -> None:
    """Point ``ATTNKIT_DATA_DIR`` at the offline copies beside the repository, unless it is set."""
    if os.environ.get("ATTNKIT_DATA_DIR", "").strip():
        return
    for shared in (REPO.parent / "shared" / "data", REPO / "shared" / "data"):
        if (shared / "mnist").is_dir():
            os.environ["ATTNKIT_DATA_DIR"] = str(shared)
            return


def run_one(config_path: Path, overrides: list[str], args: argparse.Namespace) -> dict:
    name = config_path.stem
    config = read_yaml(config_path)
    extra = [f"train.device={args.device}", f"train.progress={str(args.progress).lower()}"]
    if args.max_minutes is not None:
        extra.append(f"train.max_minutes={args.max_minutes}")
    config = apply_overrides(config, extra + overrides)  # the user's --set last: they win
    out = Path(args.output_root) / name
    began = time.perf_counter()
    best = train_vision(
        config, output_dir=out, resume=False, source=str(config_path), overwrite=True
    )  # a benchmark run replaces its previous one
    train_wall = time.perf_counter() - began
    began = time.perf_counter()
    result = evaluate_vision(best, "test", device=args.device)
    eval_wall = time.perf_counter() - began
    trainer = read_state(out / "last")
    target = TARGETS.get(name)
    return {
        "config": name,
        "model": result["model"],
        "task": result["task"],
        "error_pct": round(result["error_pct"], 3),
        "accuracy": round(result["accuracy"], 5),
        "test_images": result["images"],
        "target_error_pct": target,
        "meets_target": None if target is None else result["error_pct"] <= target,
        "train_wall_s": round(train_wall, 1),
        "eval_wall_s": round(eval_wall, 1),
        "device": device_name(args.device),
        "epochs": trainer.epoch,
        "best_epoch": trainer.best_epoch,
        "best_dev_error_pct": trainer.best,
        "stopped": trainer.stopped,
        "max_minutes": config["train"].get("max_minutes"),
        "mc_samples": result.get("mc_samples"),
        "overrides": overrides,
        "checkpoint": str(best),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    which = parser.add_mutually_exclusive_group(required=True)
    which.add_argument("--config", type=Path, action="append", help="a vision config (repeatable)")
    which.add_argument("--all", action="store_true", help=f"run {', '.join(ALL)} in sequence")
    parser.add_argument(
        "--set",
        dest="overrides",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="override a config key, e.g. --set train.batch_size=256 (repeatable)",
    )
    parser.add_argument("--device", default="auto", choices=("auto", "cpu", "cuda"))
    parser.add_argument(
        "--max-minutes",
        type=float,
        default=None,
        help="training budget per run in minutes (default: each config's train.max_minutes)",
    )
    parser.add_argument(
        "--output-root",
        default=str(REPO / "runs" / "benchmarks"),
        help="checkpoints go to OUTPUT_ROOT/<config name>",
    )
    parser.add_argument("--progress", action="store_true", help="show progress bars on stderr")
    args = parser.parse_args(argv)
    use_shared_data()
    configs = [REPO / "configs" / f"{name}.yaml" for name in ALL] if args.all else args.config
    failed = False
    for path in configs:
        try:
            line = run_one(Path(path), args.overrides, args)
        except Exception as exc:  # report and go on with the next config
            traceback.print_exc(file=sys.stderr)
            line = {"config": Path(path).stem, "error": f"{type(exc).__name__}: {exc}"}
            failed = True
        print(json.dumps(line), flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
