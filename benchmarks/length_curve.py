"""The length curve (Bahdanau et al. 2015, Figure 2): the encoder-decoder without attention
against two attention models, scored by source length, on the same data and training budget.

    python benchmarks/length_curve.py                       # 3 models x 10 minutes, 2 at a time
    python benchmarks/length_curve.py --minutes 3 --quick   # small data, the full model
    python benchmarks/length_curve.py --smoke               # tiny data and model (CI)
    python benchmarks/length_curve.py --task multi30k --epochs 5 --jobs 3   # BLEU by length

``--task numbers`` (the default) is generated (no download): a list of 1 to ``--max-count``
numbers below 1000, written in English words and separated by commas, to be written as digits::

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

``--task multi30k`` is the real-text half: Multi30k de->en (``--pair``), the three models built
alike (a bi-GRU encoder of 256 per direction, a GRU decoder of 512, subword embeddings of 256;
``MULTI30K_MODEL``) over the shipped config's data and subwords, trained for ``--epochs`` epochs
(a data budget, so the outcome does not depend on the machine's load; ``--minutes`` adds a time
budget) with the LR annealed over them, and scored greedily with sacrebleu BLEU and chrF per
source-length bucket (words of the raw source). Multi30k's sentences are short (test2016: median
10 words, longest 30), so the buckets end where the data does. The data sets are read from
``$ATTNKIT_DATA_DIR/multi30k``, else from ``../shared/data`` beside the repository when it
exists (else the user cache; missing files are downloaded).
"""

from __future__ import annotations

import argparse
import json
import os
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

from attnkit.evaluation.metrics import bleu, chrf, edit_distance  # noqa: E402

MODELS = {
    "none": {"attention": "none"},
    "bahdanau": {"attention": "bahdanau"},
    "luong-general": {"attention": "luong-general"},
}
BUCKET_CHARS = 25
FULL_MODEL = {"embedding_dim": 64, "encoder_hidden": 128, "decoder_hidden": 256, "dropout": 0.1}
TINY_MODEL = {"embedding_dim": 8, "encoder_hidden": 8, "decoder_hidden": 16, "dropout": 0.0}
MULTI30K_MODEL = {
    "rnn": "gru",
    "embedding_dim": 256,
    "encoder_hidden": 256,
    "encoder_layers": 1,
    "bidirectional": True,
    "decoder_hidden": 512,
    "dropout": 0.3,
}
# Source words per Multi30k bucket: [first, last]; test2016's quartiles are 8, 10 and 13 words.
WORD_BUCKETS = [(1, 7), (8, 9), (10, 11), (12, 14), (15, 19), (20, 10_000)]
SHARED_DATA = REPO.parent / "shared" / "data"
#: the Multi30k pairs with a shipped RNN config (configs/multi30k_<src>_<tgt>.yaml)
PAIRS = ("de-en", "en-de", "en-fr", "fr-en")


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
    return write_config(cfg, out)


def multi30k_config(name: str, model: dict, args, out: Path) -> Path:
    """The shipped Multi30k experiment (data, subwords, decoding) with the length curve's model
    and an epoch budget; nothing averaged, no early stopping, one dev score per epoch."""
    shipped = REPO / "configs" / f"multi30k_{args.pair.replace('-', '_')}.yaml"
    cfg = yaml.safe_load(shipped.read_text(encoding="utf-8"))
    cfg.update(name=name, output_dir=str(out / "runs" / name))
    cfg["model"] = {**MULTI30K_MODEL, **model}
    cfg["train"].update(
        epochs=args.epochs,
        max_minutes=args.minutes,
        patience=None,
        average_checkpoints=0,
        eval_every=0,
        seed=args.seed,
        threads=args.threads,
        progress=False,
        tensorboard=False,
    )
    return write_config(cfg, out)


def write_config(cfg: dict, out: Path) -> Path:
    path = out / "configs" / f"{cfg['name']}.yaml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(cfg, sort_keys=False), encoding="utf-8")
    return path


def run(cmd: list[str], log: Path) -> None:
    with open(log, "w", encoding="utf-8") as f:
        proc = subprocess.run(cmd, stdout=f, stderr=subprocess.STDOUT, cwd=REPO)
    if proc.returncode != 0:
        tail = log.read_text(encoding="utf-8")[-2000:]
        raise SystemExit(f"{' '.join(cmd)} failed ({proc.returncode}); log {log}:\n{tail}")


def train_and_score(name: str, cfg_path: Path, out: Path, data_dir: Path | None) -> dict:
    """Train one model and score its best checkpoint on the test split, read from ``data_dir``
    (the generated lists' folder; None: ``$ATTNKIT_DATA_DIR``'s copy of the data set): a loaded
    checkpoint's own data paths are not followed."""
    python = [sys.executable, "-m", "attnkit"]
    t0 = time.time()
    run([*python, "train", str(cfg_path), "--overwrite"], out / f"{name}.train.log")
    train_s = time.time() - t0
    best = out / "runs" / name / "best"
    eval_dir = out / "eval" / name
    where = [] if data_dir is None else ["--data-dir", str(data_dir)]
    run(
        [*python, "evaluate", "--model", str(best), "--beam", "1", "--out", str(eval_dir), *where],
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


def word_buckets(test: list, hyps: list[str]) -> list[dict]:
    """sacrebleu BLEU and chrF (greedy) per bucket of source words (:data:`WORD_BUCKETS`)."""
    rows, longest = [], max(len(src.split()) for src, _ in test)
    for first, last in WORD_BUCKETS:
        items = [(r, h) for (src, r), h in zip(test, hyps) if first <= len(src.split()) <= last]
        if not items:
            continue
        refs, outs = [r for r, _ in items], [h for _, h in items]
        rows.append(
            {
                "source_words": [first, min(last, longest)],
                "items": len(items),
                "bleu": round(bleu(outs, refs), 2),
                "chrf": round(chrf(outs, refs), 2),
            }
        )
    return rows


def plot(results: dict, path: Path, title: str, axes: tuple) -> None:
    """One panel per (bucket key, score key, axis label) in ``axes``, a line per model."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(10, 4), layout="constrained")
    FigureCanvasAgg(fig)
    panels = fig.subplots(1, len(axes), squeeze=False)[0]
    for ax, (x_key, y_key, x_label, y_label) in zip(panels, axes):
        for name, result in results.items():
            x = [sum(b[x_key]) / 2 for b in result["buckets"]]
            ax.plot(x, [b[y_key] for b in result["buckets"]], marker="o", label=name)
        ax.set(xlabel=x_label, ylabel=y_label)
        ax.set_ylim(bottom=0)
        ax.grid(alpha=0.3)
    panels[0].legend()
    fig.suptitle(title)
    fig.savefig(path, dpi=130)


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--task",
        choices=("numbers", "multi30k"),
        default="numbers",
        help="numbers: generated lists of number words (exact match, CER by characters); "
        "multi30k: real sentences (BLEU, chrF by words)",
    )
    parser.add_argument(
        "--minutes",
        type=float,
        default=None,
        help="training budget per model (numbers: default 10; multi30k: none, --epochs ends it)",
    )
    parser.add_argument("--epochs", type=int, default=5, help="multi30k: epochs per model")
    parser.add_argument(
        "--pair", default="de-en", choices=PAIRS, help="multi30k: the language pair (de-en)"
    )
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
    if args.task == "multi30k" and (args.quick or args.smoke):
        parser.error("--quick and --smoke are for --task numbers")
    return args


def prepare_numbers(args, out: Path) -> tuple[dict, list, dict]:
    """The generated number-list data and the three configs: (configs, test pairs, budget)."""
    if args.minutes is None:
        args.minutes = 10.0
    if args.quick:
        args.train_size, args.test_size, args.eval_every = 2000, 240, 100
    if args.smoke:
        args.train_size, args.test_size, args.eval_every, args.max_count = 200, 40, 5, 4
        args.minutes = min(args.minutes, 0.1)
    sizes = {"train": args.train_size, "dev": 20 if args.smoke else 300, "test": args.test_size}
    splits = make_splits(args.seed, args.max_count, sizes)
    data = write_data(out / "data", splits)
    configs = {name: config(name, MODELS[name], data, args, out) for name in args.models}
    budget = {"minutes_per_model": args.minutes, "sizes": sizes, "max_count": args.max_count}
    return configs, splits["test"], budget


def prepare_multi30k(args, out: Path) -> tuple[dict, list, dict]:
    """The three Multi30k configs: (configs, test pairs, budget)."""
    if not os.environ.get("ATTNKIT_DATA_DIR", "").strip() and SHARED_DATA.is_dir():
        os.environ["ATTNKIT_DATA_DIR"] = str(SHARED_DATA)  # read by the attnkit subprocesses
    configs = {n: multi30k_config(n, MODELS[n], args, out) for n in args.models}
    test = multi30k_test(configs[args.models[0]])
    return configs, test, {"epochs_per_model": args.epochs, "minutes_per_model": args.minutes}


def picture(args) -> tuple[str, tuple]:
    """The curve's title and its panels (bucket key, score key, x label, y label)."""
    if args.task == "multi30k":
        budget = f"{args.epochs} epochs" + (f", {args.minutes:g} min" if args.minutes else "")
        title = f"Multi30k {args.pair}: attention against one fixed vector ({budget} each)"
        return title, (
            ("source_words", "bleu", "source length (words)", "test BLEU (greedy)"),
            ("source_words", "chrf", "source length (words)", "test chrF (greedy)"),
        )
    title = (
        f"Number lists -> digits: attention against one fixed vector ({args.minutes:g} min each)"
    )
    return title, (
        ("source_chars", "exact_match", "source length (characters)", "test exact match (%)"),
        ("source_chars", "cer", "source length (characters)", "test character error rate (%)"),
    )


def main() -> None:
    args = parse_args()
    out = args.out.resolve()
    prepare = prepare_multi30k if args.task == "multi30k" else prepare_numbers
    configs, test, budget = prepare(args, out)
    data_dir = None if args.task == "multi30k" else out / "data"  # where prepare_numbers wrote
    with ThreadPoolExecutor(max_workers=args.jobs) as pool:
        futures = {n: pool.submit(train_and_score, n, p, out, data_dir) for n, p in configs.items()}
        outcomes = {n: f.result() for n, f in futures.items()}
    results = {name: summarise(args.task, test, o) for name, o in outcomes.items()}
    report = {
        "command": " ".join([Path(sys.argv[0]).name, *sys.argv[1:]]),
        "task": args.task if args.task == "numbers" else f"multi30k {args.pair}",
        "machine": describe(),
        **budget,
        "jobs": args.jobs,
        "threads_per_model": args.threads,
        "results": results,
    }
    (out / "length_curve.json").write_text(json.dumps(report, indent=1), encoding="utf-8")
    plot(results, out / "length_curve.png", *picture(args))
    print(json.dumps(report, indent=1))


def multi30k_test(config_path: Path) -> list:
    """The raw test pairs of a Multi30k experiment, in the order ``attnkit evaluate`` writes."""
    from attnkit.data.tasks.registry import build_split
    from attnkit.families.seq2seq.config import load_experiment

    return build_split(load_experiment(config_path).data, "test")


def summarise(task: str, test: list, outcome: dict) -> dict:
    """One model's row of the report (``outcome``: :func:`train_and_score`'s): its budget, and
    its scores by length bucket and overall."""
    hyps = outcome["hyps"]
    if len(hyps) != len(test):
        raise SystemExit(f"{len(hyps)} test outputs for {len(test)} test pairs")
    row = {
        "train_wall_s": outcome["train_wall_s"],
        "updates": outcome["trainer"].get("step"),
        "best_dev_at_update": outcome["trainer"].get("best_step"),
        "dev_history": [h.get("dev") for h in outcome["trainer"].get("history", [])],
    }
    if task == "multi30k":
        refs = [t for _, t in test]
        row["buckets"] = word_buckets(test, hyps)
        row["bleu"], row["chrf"] = round(bleu(hyps, refs), 2), round(chrf(hyps, refs), 2)
    else:
        row["buckets"] = buckets(test, hyps)
        right = sum(h == t for (_, t), h in zip(test, hyps))
        row["exact_match"] = round(100.0 * right / len(hyps), 2)
    return row


if __name__ == "__main__":
    main()
