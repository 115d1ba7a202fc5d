"""The length curve (Bahdanau et al. 2015, Figure 2): the encoder-decoder without attention
against two attention models, scored by source length, on the same data and training budget.

    python benchmarks/length_curve.py                       # 3 models x 10 minutes, 2 at a time
    python benchmarks/length_curve.py --minutes 3 --quick   # small data, the full model
    python benchmarks/length_curve.py --smoke               # tiny data and model (CI)

The task is generated (no download): a list of 1 to ``--max-count`` numbers below 1000, written
in English words and separated by commas, to be written as digits::

    "seven hundred and twelve, forty-two, nine" -> "712 42 9"

It is chosen so that a single fixed vector *must* fail as inputs grow: every number in the
source carries about 10 bits that the output needs, so the information to pass grows linearly
with the source (up to ~200 characters for 12 numbers), while the vector that carries it does
not. Attention reads each number where it stands and should stay flat. Each source length is
equally represented in every split (the count of numbers is drawn uniformly), and no source is
in two splits.

Each model is trained with ``attnkit train`` (time budget ``--minutes``, early stopping off) and
scored greedily with ``attnkit evaluate``; the test set is then cut into source-length buckets
and scored per bucket: exact match and character error rate. Writes ``OUT/length_curve.json``
(every bucket of every model, with the training budget, updates and machine) and
``OUT/length_curve.png`` (the curve).
"""

from __future__ import annotations

import argparse
import json
import random
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import yaml
from num2words import num2words

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "src"))

sys.path.insert(0, str(REPO / "benchmarks"))

from machine_info import describe  # noqa: E402

from attnkit.evaluation.metrics import edit_distance  # noqa: E402

MODELS = {
    "none": {"attention": "none"},
    "bahdanau": {"attention": "bahdanau"},
    "luong-general": {"attention": "luong-general"},
}
BUCKET_CHARS = 25
FULL_MODEL = {"embedding_dim": 64, "encoder_hidden": 128, "decoder_hidden": 256, "dropout": 0.1}
TINY_MODEL = {"embedding_dim": 8, "encoder_hidden": 8, "decoder_hidden": 16, "dropout": 0.0}


def number_list(rng: random.Random, count: int) -> tuple[str, str]:
    numbers = [rng.randrange(1000) for _ in range(count)]
    return ", ".join(num2words(n, lang="en") for n in numbers), " ".join(map(str, numbers))


def make_splits(seed: int, max_count: int, sizes: dict[str, int]) -> dict[str, list]:
    """Disjoint splits (no source in two), the count of numbers cycling through 1..max_count.

    Test is drawn first, so every count is equally represented there; where the short lists run
    out of distinct sources (there are only 1,000 single numbers), a longer list is drawn.
    """
    rng, seen, splits = random.Random(seed), set(), {}
    for split in ("test", "dev", "train"):
        pairs = []
        while len(pairs) < sizes[split]:
            count = 1 + len(pairs) % max_count
            for attempt in range(100 * max_count):
                src, tgt = number_list(rng, min(max_count, count + attempt // 20))
                if src not in seen:
                    break
            seen.add(src)
            pairs.append((src, tgt))
        rng.shuffle(pairs)
        splits[split] = pairs
    return {split: splits[split] for split in sizes}


def write_data(directory: Path, splits: dict[str, list]) -> dict[str, str]:
    directory.mkdir(parents=True, exist_ok=True)
    paths = {}
    for split, pairs in splits.items():
        path = directory / f"{split}.tsv"
        path.write_text("".join(f"{s}\t{t}\n" for s, t in pairs), encoding="utf-8")
        paths[split] = str(path)
    return paths


def config(name: str, model: dict, data: dict, args, out: Path) -> Path:
    longest = (
        34 * args.max_count + 10
    )  # characters: the longest list ("seven hundred and ninety-eight, " x count)
    cfg = {
        "name": name,
        "output_dir": str(out / "runs" / name),
        "data": {
            "task": "parallel",
            **data,
            "max_src_len": longest,
            "max_tgt_len": 4 * args.max_count + 10,
        },
        "model": {**(TINY_MODEL if args.smoke else FULL_MODEL), **model},
        "train": {
            "epochs": 1000,
            "batch_size": 64,
            "lr": 0.001,
            "patience": None,
            "max_minutes": args.minutes,
            "eval_every": args.eval_every,
            "seed": args.seed,
            "threads": args.threads,
            "progress": False,
            "tensorboard": False,
        },
        "decode": {"max_len_cap": 4 * args.max_count + 10, "batch_size": 100},
    }
    path = out / "configs" / f"{name}.yaml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(cfg, sort_keys=False), encoding="utf-8")
    return path


def run(cmd: list[str], log: Path) -> None:
    with open(log, "w", encoding="utf-8") as f:
        proc = subprocess.run(cmd, stdout=f, stderr=subprocess.STDOUT, cwd=REPO)
    if proc.returncode != 0:
        tail = log.read_text(encoding="utf-8")[-2000:]
        raise SystemExit(f"{' '.join(cmd)} failed ({proc.returncode}); log {log}:\n{tail}")


def train_and_score(name: str, cfg_path: Path, out: Path) -> dict:
    python = [sys.executable, "-m", "attnkit"]
    t0 = time.time()
    run([*python, "train", str(cfg_path), "--overwrite"], out / f"{name}.train.log")
    train_s = time.time() - t0
    best = out / "runs" / name / "best"
    eval_dir = out / "eval" / name
    run(
        [*python, "evaluate", "--model", str(best), "--beam", "1", "--out", str(eval_dir)],
        out / f"{name}.eval.log",
    )
    last = out / "runs" / name / "last" / "trainer.json"
    trainer = json.loads(last.read_text(encoding="utf-8"))
    hyps = (eval_dir / "hyps.greedy.txt").read_text(encoding="utf-8").splitlines()
    return {"train_wall_s": round(train_s, 1), "trainer": trainer.get("state", {}), "hyps": hyps}


def buckets(test: list, hyps: list[str]) -> list[dict]:
    """Exact match and CER per source-length bucket of BUCKET_CHARS characters."""
    groups: dict[int, list] = {}
    for (src, ref), hyp in zip(test, hyps):
        groups.setdefault(len(src) // BUCKET_CHARS, []).append((ref, hyp))
    rows = []
    for k in sorted(groups):
        items = groups[k]
        errors = sum(edit_distance(list(h), list(r)) for r, h in items)
        chars = sum(len(r) for r, _ in items)
        rows.append(
            {
                "source_chars": [k * BUCKET_CHARS, (k + 1) * BUCKET_CHARS - 1],
                "items": len(items),
                "exact_match": round(100.0 * sum(r == h for r, h in items) / len(items), 2),
                "cer": round(100.0 * errors / max(1, chars), 2),
            }
        )
    return rows


def plot(results: dict, path: Path, minutes: float) -> None:
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(10, 4), layout="constrained")
    FigureCanvasAgg(fig)
    left, right = fig.subplots(1, 2)
    for name, result in results.items():
        x = [sum(b["source_chars"]) / 2 for b in result["buckets"]]
        left.plot(x, [b["exact_match"] for b in result["buckets"]], marker="o", label=name)
        right.plot(x, [b["cer"] for b in result["buckets"]], marker="o", label=name)
    left.set(xlabel="source length (characters)", ylabel="test exact match (%)", ylim=(0, 101))
    right.set(xlabel="source length (characters)", ylabel="test character error rate (%)")
    left.legend()
    fig.suptitle(
        f"Number lists -> digits: attention against one fixed vector ({minutes:g} min each)"
    )
    for ax in (left, right):
        ax.grid(alpha=0.3)
    fig.savefig(path, dpi=130)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--minutes", type=float, default=10.0, help="training budget per model")
    parser.add_argument("--max-count", type=int, default=12, help="most numbers in one source")
    parser.add_argument("--train-size", type=int, default=40000)
    parser.add_argument("--test-size", type=int, default=1200)
    parser.add_argument("--eval-every", type=int, default=500, help="updates between dev scores")
    parser.add_argument("--models", nargs="+", default=list(MODELS), choices=list(MODELS))
    parser.add_argument("--jobs", type=int, default=2, help="models trained at once")
    parser.add_argument("--threads", type=int, default=1, help="torch threads per model")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--quick", action="store_true", help="small data, the full model")
    parser.add_argument(
        "--smoke", action="store_true", help="tiny data and model, seconds per model (CI)"
    )
    parser.add_argument("--out", type=Path, default=REPO / "runs" / "length_curve")
    args = parser.parse_args()
    if args.quick:
        args.train_size, args.test_size, args.eval_every = 2000, 240, 100
    if args.smoke:
        args.train_size, args.test_size, args.eval_every, args.max_count = 200, 40, 5, 4
        args.minutes = min(args.minutes, 0.1)
    out = args.out.resolve()
    sizes = {"train": args.train_size, "dev": 20 if args.smoke else 300, "test": args.test_size}
    splits = make_splits(args.seed, args.max_count, sizes)
    data = write_data(out / "data", splits)
    configs = {name: config(name, MODELS[name], data, args, out) for name in args.models}
    with ThreadPoolExecutor(max_workers=args.jobs) as pool:
        futures = {n: pool.submit(train_and_score, n, p, out) for n, p in configs.items()}
        runs = {n: f.result() for n, f in futures.items()}
    results = {
        name: {
            "train_wall_s": r["train_wall_s"],
            "updates": r["trainer"].get("step"),
            "best_dev_at_update": r["trainer"].get("best_step"),
            "buckets": buckets(splits["test"], r["hyps"]),
            "exact_match": round(
                100.0
                * sum(h == t for (_, t), h in zip(splits["test"], r["hyps"]))
                / len(r["hyps"]),
                2,
            ),
        }
        for name, r in runs.items()
    }
    report = {
        "command": " ".join([Path(sys.argv[0]).name, *sys.argv[1:]]),
        "machine": describe(),
        "minutes_per_model": args.minutes,
        "jobs": args.jobs,
        "threads_per_model": args.threads,
        "sizes": sizes,
        "max_count": args.max_count,
        "results": results,
    }
    (out / "length_curve.json").write_text(json.dumps(report, indent=1), encoding="utf-8")
    plot(results, out / "length_curve.png", args.minutes)
    print(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
