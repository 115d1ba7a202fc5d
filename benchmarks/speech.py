#!/usr/bin/env python3
"""Attention over audio: content-attention LAS, location-aware LAS and CTC (no attention) on
spoken numbers, one budget each, scored on held-out voices.

    python benchmarks/speech.py --out docs/results/speech_cpu.json

Each model is configs/speech_numbers_las.yaml with ``model.attention`` content or location, or
``model.kind=ctc`` (the same listener, a per-frame classifier), trained for the config's epochs
(a fixed number of updates) with one thread, all three at once (at most ``--jobs`` at once), each
in a process of its own;
``--models transformer`` trains ``model.kind=transformer`` (the Transformer over frames at its
default sizes) the same way. Each best checkpoint (by dev exact match) then spells the test
split (voices no training or dev utterance was spoken in) greedily: exact match, WER over the
spoken words and CER over the digits, overall and per language. The teacher-forced attention
(LAS's; the Transformer's last layer, averaged over heads) is scored against the gold word
timings (AER with every gold link possible: ``100 - argmax in span``,
:func:`attnkit.families.speech.evaluate.attention_alignment`); CTC has no attention to score.
One JSON line per model, then the list written to --out with the machine and load average.
The splits are spoken and their features made once, before the first model starts; each model
reads them from the cache.

Chan et al. (ICASSP 2016) report LAS on Google voice search and Chorowski et al. (NIPS 2015)
location-aware attention on TIMIT phonemes: other data, other scales, so only the direction of
a comparison carries over, not a number.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).resolve().parent))  # machine_info beside this script
from machine_info import one_line  # noqa: E402

CONFIG = ROOT / "configs" / "speech_numbers_las.yaml"
MODELS = {
    "las_content": ["model.attention=content"],
    "las_location": ["model.attention=location"],
    "ctc": ["model.kind=ctc"],
    "transformer": ["model.kind=transformer"],
}
#: what a run without --models trains (the Transformer is asked for by name: --models transformer)
DEFAULT = ("las_content", "las_location", "ctc")


def run_one(name: str, runs: Path, extra: list[str]) -> dict:
    """Train and score model ``name`` in this process; its JSON row."""
    import torch

    import attnkit
    from attnkit.config import apply_overrides, read_yaml
    from attnkit.data.location import checkpoint_data
    from attnkit.data.tasks.speech_set import make_set
    from attnkit.families.speech.config import parse_config
    from attnkit.families.speech.evaluate import attention_alignment, score
    from attnkit.families.speech.train import train_speech

    torch.set_num_threads(1)
    sets = [*MODELS[name], "train.threads=1", "train.progress=false", "train.tensorboard=false"]
    began = time.time()
    best = train_speech(
        read_yaml(CONFIG), runs / name, str(CONFIG), overwrite=True, overrides=sets + extra
    )
    train_s = time.time() - began
    model = attnkit.load(best, device="cpu")
    # the test split spoken into (and read from) the audio cache training used: a loaded
    # checkpoint's own data.directory is not followed
    trained = parse_config(apply_overrides(read_yaml(CONFIG), sets + extra), str(CONFIG))
    config = checkpoint_data(model.config.data, trained.data.directory)
    data = make_set(config, "test")
    row = {"model": name, "train_s": round(train_s, 1), "cpu_s": round(time.process_time(), 1)}
    trainer = json.loads((runs / name / "last" / "trainer.json").read_text())["state"]
    row.update(updates=trainer["step"], best_update=trainer["best_step"])
    row["update_s"] = round(trainer["train_s"], 1)  # in updates alone: no scoring, no saving
    row["test"] = score(model.net, data)
    if model.config.model.kind != "ctc":  # LAS's attention, the Transformer's cross-attention
        row["alignment"] = attention_alignment(model.net, data, config.mel.hop, config.directory)
    return row


def prepare(extra: list[str]) -> float:
    """Speak each split and make its features once, here, before any model starts: the models
    then read them from the cache (:func:`attnkit.data.tasks.speech_set.make_set`) instead of
    each speaking and extracting the same audio, several at once. Its CPU seconds."""
    from attnkit.config import apply_overrides, read_yaml
    from attnkit.data.tasks.speech_set import make_set
    from attnkit.families.speech.config import parse_config

    began = time.process_time()
    data = parse_config(apply_overrides(read_yaml(CONFIG), extra), str(CONFIG)).data
    for split in ("train", "dev", "test"):
        make_set(data, split)
    return round(time.process_time() - began, 1)


def _train_group(names: list[str], runs: Path, extra: list[str]) -> list[dict]:
    """Train ``names`` at once, each in a process of its own; their rows, in order."""
    workers = {}
    for name in names:
        log = open(runs / f"{name}.log", "w")  # noqa: SIM115 (closed below)
        command = [sys.executable, __file__, "--one", name, "--runs", str(runs)]
        command += [x for s in extra for x in ("--set", s)]
        env = dict(os.environ, PYTHONUNBUFFERED="1", OMP_NUM_THREADS="1")
        workers[name] = (
            subprocess.Popen(command, stdout=subprocess.PIPE, stderr=log, env=env),
            log,
        )
    rows = []
    for name, (process, log) in workers.items():
        out, _ = process.communicate()
        log.close()
        if process.returncode != 0:
            raise SystemExit(f"{name} failed; see {log.name}")
        row = json.loads(out.decode().strip().splitlines()[-1])
        print(json.dumps(row), flush=True)
        rows.append(row)
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=Path, default=Path("runs/bench_speech"))
    parser.add_argument("--out", type=Path, default=None, help="write the JSON list here")
    parser.add_argument("--models", nargs="+", default=list(DEFAULT), choices=list(MODELS))
    parser.add_argument("--set", action="append", default=[], help="extra --set for every model")
    parser.add_argument(
        "--jobs", type=int, default=0, help="models trained at once (0: all of them)"
    )
    parser.add_argument("--one", choices=list(MODELS), help=argparse.SUPPRESS)  # a worker
    args = parser.parse_args()
    args.runs.mkdir(parents=True, exist_ok=True)
    if args.one:
        print(json.dumps(run_one(args.one, args.runs, args.set)), flush=True)
        return
    load_before = Path("/proc/loadavg").read_text().split()[:3]
    prepare_cpu_s = prepare(args.set)
    rows = []
    jobs = args.jobs or len(args.models)
    for first in range(0, len(args.models), jobs):  # at most --jobs processes at once
        rows += _train_group(args.models[first : first + jobs], args.runs, args.set)
    if args.out is not None:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        doc = {
            "machine": one_line(),
            "command": " ".join(["python", "benchmarks/speech.py", *sys.argv[1:]]),
            "loadavg_before": load_before,
            "loadavg_after": Path("/proc/loadavg").read_text().split()[:3],
            "prepare_cpu_s": prepare_cpu_s,  # speaking the splits and making their features
            "runs": rows,
        }
        args.out.write_text(json.dumps(doc, indent=1) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
