#!/usr/bin/env python3
"""Train and score one real-data experiment (CMUdict G2P, Multi30k) and print ONE JSON line.

    python benchmarks/real_data.py --config configs/g2p_cmudict.yaml
    python benchmarks/real_data.py --config configs/g2p_reference.yaml --anchor-epochs 10
    python benchmarks/real_data.py --config configs/multi30k_de_en.yaml --set train.max_minutes=2
    # an ensemble of 3
    python benchmarks/real_data.py --config configs/g2p_cmudict.yaml --seeds 1,2,3 --jobs 3

Run it from the repository root. The configs' ``data.directory: null`` reads
``$ATTNKIT_DATA_DIR/<data set>``; when that variable is unset it is set to the offline copies in
``../shared/data`` next to the repository, if they exist (else the user cache is used and missing
files are downloaded). Steps, one subprocess each:

1. ``attnkit train CONFIG`` into ``--runs/<config name>`` (its output:
   ``--runs/<config name>.train.log``; the rest logs to ``--runs/<config name>.log``);
2. the checkpoint to score: ``averaged`` when the config averages checkpoints
   and the average is at least as good on dev as ``best``, else ``best``;
3. ``attnkit evaluate --beam K`` on the test split: the task's metrics
   (WER/PER for G2P, BLEU/chrF for translation) greedily and with beam K;
4. with ``--seeds 1,2,3``: steps 1-3 once per seed (runs ``<config name>-seed<S>``, ``--jobs`` of
   them training at once), then the chosen checkpoints together as an ensemble (``attnkit evaluate``
   with one ``--model`` each), under ``"members"`` and ``"ensemble"``;
5. with ``--anchor-epochs N`` (G2P only): the JoeyNMT reference model trained
   for N epochs by ``../shared/anchors/joeynmt_g2p.py --decode``, whose JSON
   goes under ``"anchor"``.

The JSON holds the metrics, training wall time, updates, training target
tokens/s (target tokens over the seconds spent in updates, both from the
trainer state), the dev scores, and the machine (CPU, cores, torch, GPU).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))  # machine_info beside this script
from machine_info import describe  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
ANCHOR = ROOT.parent / "shared" / "anchors" / "joeynmt_g2p.py"
SHARED_DATA = ROOT.parent / "shared" / "data"


def _attnkit(args: list[str], log, capture: bool = False) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    return subprocess.run(
        [sys.executable, "-m", "attnkit", *args],
        env=env,
        text=True,
        stderr=log,
        stdout=subprocess.PIPE if capture else log,
    )


def _trainer_json(directory: Path) -> dict:
    return json.loads((directory / "trainer.json").read_text(encoding="utf-8"))


def pick_checkpoint(run: Path, higher_is_better: bool) -> tuple[Path, dict]:
    """``averaged`` if it exists and is at least as good on dev as ``best``, else ``best``; and both
    dev scores."""
    best = _trainer_json(run / "best")
    metric, state = best["metric"], best["state"]
    dev = {"best": {"update": state["best_step"], metric: state["best"]}}
    if not (run / "averaged" / "meta.json").is_file():
        return run / "best", dev
    averaged = _trainer_json(run / "averaged")
    dev["averaged"] = {"updates": averaged["averaged_steps"], metric: averaged["dev"][metric]}
    a, b = averaged["dev"][metric], state["best"]
    better = b is None or (a >= b if higher_is_better else a <= b)
    return (run / "averaged" if better else run / "best"), dev


def run_anchor(epochs: int, data: Path, log) -> dict:
    """The JoeyNMT reference model for ``epochs`` epochs on CMUdict, greedy and beam 5
    (its own JSON line)."""
    cmd = [
        sys.executable,
        str(ANCHOR),
        "--epochs",
        str(epochs),
        "--updates",
        str(10**9),
        "--decode",
        "--data",
        str(data),
    ]
    proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=log, text=True)
    if proc.returncode != 0:
        return {"error": f"anchor exited {proc.returncode}, see the log", "command": " ".join(cmd)}
    return json.loads(proc.stdout.strip().splitlines()[-1])


def _evaluate(models: list[Path], out: Path, args, log) -> dict:
    """``attnkit evaluate`` of one checkpoint (or an ensemble of several) on the test split; its
    JSON."""
    evaluate = [
        "evaluate",
        *[x for m in models for x in ("--model", str(m))],
        "--beam",
        str(args.beam),
        "--out",
        str(out),
        "--json",
    ]
    if args.alpha is not None:
        evaluate += ["--alpha", str(args.alpha)]
    if args.data_dir is not None:
        evaluate += ["--data-dir", str(args.data_dir)]
    ev = _attnkit(evaluate, log, capture=True)
    if ev.returncode != 0:
        raise RuntimeError(f"attnkit evaluate exited {ev.returncode}, see {log.name}")
    return json.loads(ev.stdout.strip().splitlines()[-1])


def _train(config: Path, run: Path, sets: list[str], log_path: Path) -> tuple[int, float]:
    """``attnkit train`` into ``run``, its output in ``log_path``: (exit status, wall seconds)."""
    with open(log_path, "w", encoding="utf-8") as log:
        t0 = time.time()
        train = _attnkit(
            [
                "train",
                str(config),
                "--output-dir",
                str(run),
                "--overwrite",
                "--set",
                "train.progress=false",
                *sets,
            ],
            log,
        )
        return train.returncode, round(time.time() - t0, 1)


def _split_folder(data) -> Path | None:
    """The folder of the test split's file, for a task read from the user's own files (a
    loaded checkpoint's paths are not followed, so evaluate is told where it is); None for a
    data set, which evaluate finds in ``$ATTNKIT_DATA_DIR``."""
    test = getattr(data, "test", None)
    if not test:
        return None
    return Path(test[0] if isinstance(test, list) else test).resolve().parent


def _scored_run(run: Path, wall_s: float, higher_is_better: bool, args, log) -> tuple[Path, dict]:
    """Pick the checkpoint of a finished run, evaluate it: (checkpoint, the run's part of the
    JSON)."""
    model, dev = pick_checkpoint(run, higher_is_better)
    scores = _evaluate([model], run / "eval-test", args, log)
    state = _trainer_json(run / "last")["state"]
    return model, {
        "train_wall_s": wall_s,
        "checkpoint": model.name,
        "greedy": scores["greedy"],
        f"beam{args.beam}": scores.get(f"beam{args.beam}"),
        "dev": dev,
        "updates": state["step"],
        "epochs_completed": state["epoch"],
        "train_minutes": round(state["elapsed_s"] / 60, 2),
        "train_update_s": round(state.get("train_s", 0.0), 1),
        "train_target_tokens": state.get("tokens"),
        "train_tokens_per_s": round(state["tokens"] / state["train_s"], 1)
        if state.get("train_s")
        else None,
    }


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument(
        "--config",
        type=Path,
        required=True,
        help="experiment YAML (configs/g2p_*.yaml, multi30k_*.yaml)",
    )
    ap.add_argument(
        "--set",
        dest="overrides",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="config override passed to attnkit train (repeatable)",
    )
    ap.add_argument(
        "--runs", type=Path, default=Path("runs/real_data"), help="where checkpoints and logs go"
    )
    ap.add_argument("--beam", type=int, default=5, help="beam size of the beam run (default 5)")
    ap.add_argument(
        "--alpha",
        type=float,
        default=None,
        help="length penalty (default: the config's decode.alpha)",
    )
    ap.add_argument(
        "--seeds",
        type=str,
        default=None,
        metavar="S1,S2,...",
        help="train one run per seed (train.seed), score each, then score all of them as one "
        "ensemble",
    )
    ap.add_argument(
        "--jobs",
        type=int,
        default=1,
        help="with --seeds: trainings at once (several share a GPU well; on a CPU keep 1)",
    )
    ap.add_argument(
        "--anchor-epochs",
        type=int,
        default=None,
        metavar="N",
        help="G2P only: also train the JoeyNMT reference model for N epochs and decode it",
    )
    args = ap.parse_args()
    try:
        seeds = None if args.seeds is None else [int(x) for x in args.seeds.split(",") if x.strip()]
    except ValueError:
        ap.error(f"--seeds: expected comma-separated integers, got {args.seeds!r}")
    if seeds is not None and (len(seeds) < 2 or len(set(seeds)) < len(seeds)):
        ap.error("--seeds: give at least two different seeds for an ensemble, each once")
    if args.jobs < 1:
        ap.error("--jobs must be at least 1")

    if not os.environ.get("ATTNKIT_DATA_DIR", "").strip() and SHARED_DATA.is_dir():
        os.environ["ATTNKIT_DATA_DIR"] = str(SHARED_DATA)  # inherited by every attnkit subprocess
    sys.path.insert(0, str(ROOT / "src"))
    from attnkit.data.location import dataset_dir
    from attnkit.data.tasks.registry import task_metric
    from attnkit.families.seq2seq.config import load_experiment

    cfg = load_experiment(args.config, args.overrides)  # fails early, naming the bad key
    if args.anchor_epochs is not None and cfg.data.task != "g2p":
        ap.error(f"--anchor-epochs is for G2P configs; {args.config} has task {cfg.data.task!r}")
    higher_is_better = task_metric(cfg.data).higher_is_better
    args.data_dir = _split_folder(cfg.data)
    name = args.config.stem
    args.runs.mkdir(parents=True, exist_ok=True)
    sets = [x for o in args.overrides for x in ("--set", o)]
    result: dict = {"config": str(args.config), "overrides": args.overrides, "task": cfg.data.task}
    if seeds is None:
        jobs = [(args.runs / name, sets)]
    else:
        jobs = [
            (args.runs / f"{name}-seed{seed}", sets + ["--set", f"train.seed={seed}"])
            for seed in seeds
        ]
        result["seeds"] = seeds
    log_path = args.runs / f"{name}.log"
    with open(log_path, "w", encoding="utf-8") as log:
        with ThreadPoolExecutor(
            max_workers=args.jobs
        ) as pool:  # each thread waits on one training process
            trained = list(
                pool.map(
                    lambda job: _train(
                        args.config, job[0], job[1], job[0].parent / f"{job[0].name}.train.log"
                    ),
                    jobs,
                )
            )
        failed = [str(run) for (run, _), (code, _) in zip(jobs, trained) if code != 0]
        if failed:
            print(
                json.dumps(
                    {**result, "error": f"attnkit train failed for {failed}, see their .train.log"}
                )
            )
            sys.exit(1)
        try:
            scored = [
                _scored_run(run, wall_s, higher_is_better, args, log)
                for (run, _), (_, wall_s) in zip(jobs, trained)
            ]
            if seeds is None:
                result.update(scored[0][1])
            else:
                result["members"] = [
                    {"seed": seed, **part} for seed, (_, part) in zip(seeds, scored)
                ]
                ensemble = _evaluate(
                    [model for model, _ in scored],
                    args.runs / f"{name}-ensemble-eval-test",
                    args,
                    log,
                )
                result["ensemble"] = {
                    "checkpoints": [str(model) for model, _ in scored],
                    "greedy": ensemble["greedy"],
                    f"beam{args.beam}": ensemble.get(f"beam{args.beam}"),
                }
        except RuntimeError as exc:
            print(json.dumps({**result, "error": str(exc)}))
            sys.exit(1)
        result.update({"threads": cfg.train.threads, "machine": describe(), "log": str(log_path)})
        if args.anchor_epochs is not None:
            result["anchor"] = run_anchor(
                args.anchor_epochs, dataset_dir("cmudict", cfg.data.directory), log
            )
    print(json.dumps(result), flush=True)


if __name__ == "__main__":
    main()
