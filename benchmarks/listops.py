#!/usr/bin/env python3
"""Cost against quality: attnkit's Transformer trained on ListOps (or any seq2seq task's
Transformer config, ``--config``) with every attention implementation under one budget, and the
Pareto picture of accuracy against time and memory.

    python benchmarks/listops.py --json docs/results/listops_cpu.json \
        --plot docs/images/listops_pareto_cpu.png
    python benchmarks/listops.py --impls explicit linear --epochs 1 --train-size 320   # a sketch
    python benchmarks/listops.py --config configs/numbers_transformer.yaml --impls auto explicit \
        local --window 4 --epochs 10 --jobs 2 --set "data.languages=[en,de]"
    python benchmarks/listops.py --config configs/numbers_long_transformer.yaml --score token \
        --jobs 2 --window 32   # lists of 20 numbers, ~500 characters: where the costs differ

Each implementation (``model.attention_impl``; ``auto``, the default path where the backend
chooses, is the reference line) trains the config (``configs/listops_transformer.yaml`` unless
``--config``) in a subprocess of its own (``attnkit train``, then ``attnkit evaluate --beam 1
--examples 0`` on the test split: test exact match of greedy decoding, with no report attention
records written; for ListOps the answer is one token, so greedy is exact), with the same data,
seed, number of updates (the epochs over the same training set, early stopping off:
``train.patience=null``), one torch thread, and no time limit. ``--jobs 2`` runs two
implementations at once (each still on one thread): the updates and accuracies are unchanged,
the seconds are then those of a machine shared with the other run.
The budget is updates, not seconds: every implementation makes the same number of them, and
the time it took is what it costs.

Per implementation the JSON holds: ``test_accuracy`` (%, exact match of the answer digit of the
best checkpoint on dev), ``test_token_accuracy`` (%, the reference's characters that the greedy
output has at the same place: partial credit where a long target is seldom exactly right),
``train_update_s`` (seconds spent in updates, the trainer's own count: dev evaluations excluded)
and ``update_s`` (the same per update), ``train_wall_s`` and ``train_cpu_s`` (the whole
``attnkit train`` process: wall seconds, and its user + system CPU seconds, which a busy machine
inflates far less than the wall clock; start-up, data and dev evaluations included),
``test_items_in_place`` and ``test_items_by_place`` (%, the reference's space-separated items,
a numbers list's numbers, that the output has at the same place: in all, and by place),
``peak_rss_mib`` (the training process's peak resident set, from ``wait4``: everything the
process touched, Python and torch included) and ``updates``. ``baseline_rss_mib`` is the peak
of a process that only imports torch and attnkit (``baseline_cpu_s`` its CPU seconds), so the
differences above it are the training's own. ``majority`` is the test share of the most common
answer (what a constant guess scores; near 0 where every answer differs, as in the numbers task);
``majority_token`` is the token accuracy of the best constant guess place by place (the training
targets' most common character at each place, as long as their median length): what an output
scores that reads nothing of its input, the floor of ``test_token_accuracy``;
``load_before`` / ``load_after`` are ``/proc/loadavg`` (a busy machine slows all alike, but not
evenly over time: runs are in sequence unless ``--jobs 2``).

``--plot FILE`` draws accuracy (``--score exact``, the default, or ``token``) against the training
process's CPU seconds (seconds in updates for a JSON without them) and against peak memory, one
point per implementation, the Pareto front (no other point both cheaper and more accurate)
joined, and the constant guess as a line (``majority`` for exact match, ``majority_token`` for
token accuracy).
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import subprocess
import sys
import textwrap
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(Path(__file__).resolve().parent))  # machine_info beside this script

import yaml  # noqa: E402
from machine_info import describe  # noqa: E402

from attnkit.attention import IMPLEMENTATIONS  # noqa: E402

CONFIG = ROOT / "configs" / "listops_transformer.yaml"
#: LRA's ListOps accuracies (Tay et al. 2021, Table 1), where an implementation here matches
LRA_LISTOPS = {"explicit": 36.37, "local": 15.82, "linear": 16.13, "performer": 18.01}
#: --score -> (the JSON key it draws, the picture's label)
SCORES = {
    "exact": ("test_accuracy", "test exact match, %"),
    "token": ("test_token_accuracy", "test token accuracy (characters in place), %"),
}


def parse_args(argv=None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--config", type=Path, default=CONFIG)
    p.add_argument(
        "--impls",
        nargs="+",
        default=list(IMPLEMENTATIONS),
        choices=("auto", *IMPLEMENTATIONS),
        help="model.attention_impl values, in order (auto: the default path, a reference line)",
    )
    p.add_argument("--epochs", type=int, help="passes over the training set (default: config's)")
    p.add_argument("--train-size", type=int, help="training expressions (default: config's)")
    p.add_argument("--window", type=int, default=16, help="local: half width of the window")
    p.add_argument("--features", type=int, default=64, help="performer: random features")
    p.add_argument("--runs", type=Path, default=ROOT / "runs" / "listops_bench")
    p.add_argument("--set", action="append", default=[], help="more key=value overrides")
    p.add_argument("--jobs", type=int, default=1, help="implementations trained at once (1 or 2)")
    p.add_argument("--json", type=Path, help="write the JSON here (else print it)")
    p.add_argument("--plot", type=Path, help="the Pareto picture (PNG)")
    p.add_argument(
        "--score",
        choices=tuple(SCORES),
        default="exact",
        help="the accuracy the picture draws: test exact match, or token accuracy (the share of "
        "target characters right at their place) where long targets are seldom exactly right",
    )
    p.add_argument(
        "--rescore",
        action="store_true",
        help="train nothing: score again the greedy outputs a finished run left in --runs (the "
        "same --config, --impls and --set), printing token accuracy and the items in place",
    )
    args = p.parse_args(argv)
    if not args.config.is_file():
        p.error(f"--config: no such file: {args.config}")
    for name in ("epochs", "train_size", "window", "features"):
        if getattr(args, name) is not None and getattr(args, name) < 1:
            p.error(f"--{name.replace('_', '-')}: must be at least 1, got {getattr(args, name)}")
    if args.jobs not in (1, 2):
        p.error(f"--jobs: 1 or 2 (each job is one torch thread), got {args.jobs}")
    if len(set(args.impls)) != len(args.impls):
        p.error(f"--impls: each implementation once, got {' '.join(args.impls)}")
    return args


def _load() -> str:
    return Path("/proc/loadavg").read_text().strip() if Path("/proc/loadavg").is_file() else ""


def _run(cmd: list[str], log: Path) -> tuple[int, float, float, float]:
    """Run ``cmd`` (its output to ``log``): (exit status, wall seconds, peak RSS in MiB, CPU
    seconds: user + system, from ``wait4``)."""
    env = dict(os.environ, OMP_NUM_THREADS="1", PYTHONPATH=str(ROOT / "src"))
    with open(log, "w", encoding="utf-8") as out:
        t0 = time.perf_counter()
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, env=env, cwd=ROOT)
        _, status, usage = os.wait4(proc.pid, 0)
        proc.returncode = os.waitstatus_to_exitcode(status)
    cpu = usage.ru_utime + usage.ru_stime
    return proc.returncode, time.perf_counter() - t0, usage.ru_maxrss / 1024, cpu  # KiB -> MiB


def overrides(args: argparse.Namespace, impl: str) -> list[str]:
    sets = [f"model.attention_impl={impl}", "train.threads=1", "train.max_minutes=null"]
    sets += ["train.progress=false", "train.tensorboard=false"]
    sets.append("train.patience=null")  # no early stopping: the same number of updates for all
    if impl == "local":
        sets.append(f"model.attention_window={args.window}")
    if impl == "performer":
        sets.append(f"model.random_features={args.features}")
    if args.epochs:
        sets.append(f"train.epochs={args.epochs}")
    if args.train_size:
        sets.append(f"data.train_size={args.train_size}")
    return sets + args.set


def train_and_score(args: argparse.Namespace, impl: str) -> dict:
    """One implementation: train, score the best checkpoint on test; its part of the JSON."""
    run = args.runs / impl
    run.mkdir(parents=True, exist_ok=True)
    sets = [x for s in overrides(args, impl) for x in ("--set", s)]
    train = [sys.executable, "-m", "attnkit", "train", str(args.config), "--output-dir", str(run)]
    rc, wall, rss, cpu = _run([*train, "--overwrite", *sets], run.parent / f"{impl}.train.log")
    if rc != 0:
        return {"error": f"attnkit train exited {rc}: see {impl}.train.log"}
    evaluate = [sys.executable, "-m", "attnkit", "evaluate", "--model", str(run / "best")]
    out, hyps = run.parent / f"{impl}.eval.json", run.parent / f"{impl}.eval"
    # --examples 0: the scores and outputs alone (no report attention records: at 500
    # characters a report's maps cost more than the scoring)
    flags = ["--beam", "1", "--examples", "0", "--json", "--threads", "1", "--out", str(hyps)]
    rc_eval, *_ = _run([*evaluate, *flags], out)
    if rc_eval != 0:
        return {"error": f"attnkit evaluate exited {rc_eval}: see {out.name}"}
    scores = json.loads(out.read_text(encoding="utf-8").strip().splitlines()[-1])
    greedy = (hyps / "hyps.greedy.txt").read_text(encoding="utf-8").split("\n")
    state = json.loads((run / "last" / "trainer.json").read_text(encoding="utf-8"))["state"]
    best = json.loads((run / "best" / "trainer.json").read_text(encoding="utf-8"))["state"]
    return {
        "test_accuracy": scores["greedy"]["exact_match"],
        "test_token_accuracy": token_accuracy(greedy, [t for _, t in scored_split(args)]),
        **items_in_place(greedy, [t for _, t in scored_split(args)]),
        "best_dev": best["best"],
        "best_update": best["best_step"],
        "updates": state["step"],
        "train_update_s": round(state["train_s"], 3),
        "update_s": round(state["train_s"] / max(1, state["step"]), 4),
        "train_wall_s": round(wall, 1),
        "train_cpu_s": round(cpu, 1),
        "peak_rss_mib": round(rss, 1),
        "overrides": overrides(args, impl),
        "lra_listops": LRA_LISTOPS.get(impl) if task_of(args) == "listops" else None,
    }


def token_accuracy(hyps: list[str], refs: list[str]) -> float:
    """The share (%) of the references' characters that the hypothesis has at the same place
    (a character-level target's tokens; a missing or extra character scores nothing more)."""
    hyps = [h.replace("<unk>", "\0") for h in hyps]  # an unknown output is one wrong token
    total = sum(len(r) for r in refs)
    right = sum(h == r for hyp, ref in zip(hyps, refs) for h, r in zip(hyp, ref))
    return round(100 * right / max(1, total), 2)


def items_in_place(hyps: list[str], refs: list[str]) -> dict:
    """The references' space-separated items (a numbers list's numbers) that the hypothesis has
    at the same place, as a share (%) of all (``test_items_in_place``) and by place
    (``test_items_by_place``, the first item first): where a model reads and where it loses
    its place."""
    right, total = collections.Counter(), collections.Counter()
    for hyp, ref in zip(hyps, refs):
        said = hyp.split()
        for place, item in enumerate(ref.split()):
            total[place] += 1
            right[place] += place < len(said) and said[place] == item
    by_place = [round(100 * right[i] / total[i], 1) for i in sorted(total)]
    share = round(100 * sum(right.values()) / max(1, sum(total.values())), 2)
    return {"test_items_in_place": share, "test_items_by_place": by_place}


def rescore(args: argparse.Namespace) -> dict:
    """``--rescore``: the item scores of the greedy outputs a finished run left in ``--runs``
    (``IMPL.eval/hyps.greedy.txt``), against the same test split; nothing is trained."""
    refs = [t for _, t in scored_split(args)]
    scores = {}
    for impl in args.impls:
        path = args.runs / f"{impl}.eval" / "hyps.greedy.txt"
        if not path.is_file():
            scores[impl] = {"error": f"no {path}"}
            continue
        greedy = path.read_text(encoding="utf-8").split("\n")
        scores[impl] = {"test_token_accuracy": token_accuracy(greedy, refs)}
        scores[impl].update(items_in_place(greedy, refs))
    return {"command": "python benchmarks/listops.py " + " ".join(sys.argv[1:]), "rescored": scores}


def scored_split(args: argparse.Namespace) -> list[tuple[str, str]]:
    """The test pairs the checkpoints are scored on, in the order ``attnkit evaluate`` writes."""
    from attnkit.data.tasks.registry import build_splits, data_from_dict

    return build_splits(data_from_dict(data_section(args))).test


def task_of(args: argparse.Namespace) -> str:
    return data_section(args)["task"]


def describe_data(section: dict) -> str:
    """One line on the data: ListOps' lengths and depth, else the task and its size keys."""
    if section["task"] == "listops":
        return (
            f"lengths {section['min_length']}-{section['max_length']}, depth {section['max_depth']}"
        )
    keys = ("languages", "direction", "max_number", "count", "train_size")
    return ", ".join([section["task"], *(f"{k} {section[k]}" for k in keys if k in section)])


def data_section(args: argparse.Namespace) -> dict:
    """The config's ``data:`` section with the ``--set data.*`` and ``--train-size`` overrides."""
    section = dict(yaml.safe_load(args.config.read_text(encoding="utf-8"))["data"])
    for line in args.set:
        key, _, value = line.partition("=")
        if key.startswith("data."):
            section[key[5:]] = yaml.safe_load(value)
    if args.train_size:
        section["train_size"] = args.train_size
    return section


def majority_share(args: argparse.Namespace) -> float:
    """The test share (%) of the most common answer, from the same generated test split."""
    test = scored_split(args)
    counts = collections.Counter(target for _, target in test)
    return round(100 * max(counts.values()) / len(test), 2)


def majority_token_share(args: argparse.Namespace) -> float:
    """The test token accuracy (%) of one constant output that reads no input: place by place,
    the most common character of the training targets there, as long as their median length."""
    from attnkit.data.tasks.registry import build_splits, data_from_dict

    splits = build_splits(data_from_dict(data_section(args)))
    train = [target for _, target in splits.train]
    length = sorted(len(t) for t in train)[len(train) // 2]
    guess = "".join(
        collections.Counter(t[i] for t in train if len(t) > i).most_common(1)[0][0]
        for i in range(length)
    )
    return token_accuracy([guess] * len(splits.test), [t for _, t in splits.test])


def pareto(points: list[tuple[float, float]]) -> list[int]:
    """Indices of the points no other point beats in both (lower cost, higher accuracy), by
    cost."""
    order = sorted(range(len(points)), key=lambda i: (points[i][0], -points[i][1]))
    front, best = [], float("-inf")
    for i in order:
        if points[i][1] > best:
            front.append(i)
            best = points[i][1]
    return front


def plot(result: dict, path: Path, score: str = "exact") -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    metric, metric_label = SCORES[score]
    runs = {k: v for k, v in result["implementations"].items() if metric in v}
    fig, axes = plt.subplots(1, 2, figsize=(10, 4.4), sharey=True)
    # CPU seconds where every run has them: a shared machine inflates wall seconds far more
    cpu = all("train_cpu_s" in run for run in runs.values())
    time_key, time_label = (
        ("train_cpu_s", "training cost, CPU seconds of the training process")
        if cpu
        else ("train_update_s", "training time, seconds in updates")
    )
    for ax, key, label in zip(
        axes,
        (time_key, "peak_rss_mib"),
        (time_label, "peak memory of the training process, MiB"),
    ):
        names = list(runs)
        points = [(runs[n][key], runs[n][metric]) for n in names]
        for name, (x, y) in zip(names, points):
            ax.scatter(x, y, s=40)
            ax.annotate(name, (x, y), textcoords="offset points", xytext=(4, 4), fontsize=9)
        front = pareto(points)
        ax.plot(
            [points[i][0] for i in front],
            [points[i][1] for i in front],
            "k--",
            lw=1,
            label="Pareto front",
        )
        if score == "exact":
            ax.axhline(result["majority"], color="grey", lw=1, label="majority answer")
        elif "majority_token" in result:
            ax.axhline(
                result["majority_token"], color="grey", lw=1, label="constant guess, by place"
            )
        ax.set_xlabel(label)
        ax.legend(fontsize=8)
    axes[0].set_ylabel(metric_label)
    title = (
        f"{Path(result['config']).stem} ({result['data']}), {result['updates']} updates each, "
        "one CPU thread each"
    )
    fig.suptitle(textwrap.fill(title, 110), fontsize=10)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)


def _one(args: argparse.Namespace, impl: str) -> dict:
    t0 = time.time()
    run = {"load_before": _load(), **train_and_score(args, impl), "load_after": _load()}
    print(f"{impl}: {run} ({time.time() - t0:.0f} s)", file=sys.stderr)
    return run


def main(argv=None) -> None:
    args = parse_args(argv)
    if args.rescore:
        print(json.dumps(rescore(args), indent=1))
        return
    args.runs.mkdir(parents=True, exist_ok=True)
    data = data_section(args)
    result = {
        "command": "python benchmarks/listops.py " + " ".join(sys.argv[1:]),
        "machine": describe(),
        "load_before": _load(),
        "config": str(
            args.config.relative_to(ROOT) if args.config.is_relative_to(ROOT) else args.config
        ),
        "data": describe_data(data),
        "majority": majority_share(args),
        "majority_token": majority_token_share(args),
        "score": args.score,
    }
    _, _, result["baseline_rss_mib"], result["baseline_cpu_s"] = _run(
        [sys.executable, "-c", "import torch, attnkit.families"], args.runs / "baseline.log"
    )
    result["jobs"] = args.jobs
    with ThreadPoolExecutor(max_workers=args.jobs) as pool:
        done = list(pool.map(lambda impl: _one(args, impl), args.impls))
    result["implementations"] = dict(zip(args.impls, done))
    result["load_after"] = _load()
    result["updates"] = max(
        (r.get("updates", 0) for r in result["implementations"].values()), default=0
    )
    text = json.dumps(result, indent=1)
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(text + "\n", encoding="utf-8")
    print(text)
    if args.plot:
        plot(result, args.plot, args.score)


if __name__ == "__main__":
    main()
