"""Test accuracy of the text classifiers on SST-2 and SST-5, with and without attention: JSON.

    python benchmarks/sst.py                                  # the four runs below, in sequence
    python benchmarks/sst.py sst5_bilstm_none --max-minutes 13   # one of them
    python benchmarks/sst.py --config configs/sst2_bilstm_attention.yaml --set train.lr=5e-4
    python benchmarks/sst.py --json docs/results/sst.json     # also write the lines to a file
    python benchmarks/sst.py sst2_bilstm_attention --set train.seed=3 --keep runs/sst --maps

``--keep DIR`` keeps each run in ``DIR/NAME-seedS`` (else a scratch directory is removed);
``--maps`` writes there, beside the run, ``test_maps.json``: every test sentence's words, gold
label, predicted probabilities and attention weights, what the seed-variance comparison of
Wiegreffe & Pinter (2019) reads.

Each run trains one config (a single model, on the CPU unless ``--device``), keeps the
checkpoint of the best dev accuracy, and scores it on the test sentences; with
``train.average_checkpoints`` it scores ``averaged`` instead (the best on dev of the best
checkpoint and the means of the N best). One JSON line per
run on stdout::

    {"config": "sst2_bilstm_attention", "task": "SST-2 (phrases)", "test_accuracy": 0.85,
     "target": 0.854, "meets_target": true, "train_wall_s": 780.1, "epochs": 6, ...}

Targets (test accuracy): SST-2 0.854 (Socher et al. 2013, the RNTN), SST-5 0.46. No pretrained
embeddings are used. The SST is read from ``$ATTNKIT_DATA_DIR/sst``; when that variable is unset
it is set to ``../shared/data`` next to the repository where that holds ``sst/``.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "src"))
sys.path.insert(0, str(REPO / "benchmarks"))

import torch  # noqa: E402
from machine_info import describe  # noqa: E402

from attnkit.api.training import train  # noqa: E402
from attnkit.checkpoint import read_json  # noqa: E402
from attnkit.data.tasks.text import TextData, task_name  # noqa: E402
from attnkit.families.text.bundle import load_text_model  # noqa: E402
from attnkit.families.text.scoring import accuracy, predict  # noqa: E402
from attnkit.training.state import read_state  # noqa: E402

ALL = (
    "sst2_bilstm_attention",
    "sst2_bilstm_none",
    "sst5_bilstm_attention",
    "sst5_bilstm_none",
)
TARGETS = {2: 0.854, 5: 0.46}
#: configs run without a file of their own: (base config, --set overrides)
DERIVED = {"sst5_bilstm_none": ("sst5_bilstm_attention", ["model.attention=none"])}


def _data_dir() -> None:
    shared = REPO.parent / "shared" / "data"
    if not os.environ.get("ATTNKIT_DATA_DIR") and (shared / "sst").is_dir():
        os.environ["ATTNKIT_DATA_DIR"] = str(shared)


def run_one(name: str, config: Path, sets: list[str], out: Path, maps: bool = False) -> dict:
    began = time.time()
    run = train(config, overrides=sets, output_dir=out, overwrite=True)
    wall = time.time() - began
    # with train.average_checkpoints, the run's chosen mean (or best single) checkpoint
    scored = run.averaged or run.best
    bundle = load_text_model(scored, "auto")
    test = TextData(bundle.config.data).split("test")
    answers = predict(bundle.model, [e.words for e in test], bundle.vocab)
    acc = accuracy(answers, [e.label for e in test])
    if maps:
        _write_maps(out / "test_maps.json", test, answers)
    classes = bundle.config.data.classes
    trainer = read_state(run.last)
    return {
        "config": name,
        "task": task_name(bundle.config.data),
        "encoder": bundle.config.model.encoder,
        "attention": bundle.config.model.attention,
        "test_accuracy": round(acc, 4),
        "test_sentences": len(test),
        "target": TARGETS[classes],
        "meets_target": acc >= TARGETS[classes],
        "checkpoint": scored.name,
        "best_dev_accuracy": trainer.best,
        "scored_dev_accuracy": read_json(scored / "trainer.json")
        .get("dev", {})
        .get("accuracy", trainer.best),
        "best_epoch": trainer.best_epoch,
        "epochs": trainer.epoch,
        "stopped": trainer.stopped,
        "train_wall_s": round(wall, 1),
        "overrides": sets,
        "machine": describe(),
        "torch_threads": torch.get_num_threads(),
    }


def _write_maps(path: Path, test, answers) -> None:
    """Each test sentence's words, label, probabilities and attention (None without it)."""
    rows = [
        {
            "words": list(e.words),
            "label": int(e.label),
            "probs": [round(float(p), 5) for p in a.probs],
            "weights": None if a.weights is None else a.weights.round(5).tolist(),
        }
        for e, a in zip(test, answers, strict=True)
    ]
    path.write_text(json.dumps(rows) + "\n", encoding="utf-8")


def _seed_of(sets: list[str]) -> str:
    seeds = [s.split("=", 1)[1] for s in sets if s.startswith("train.seed=")]
    return seeds[-1] if seeds else "config"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("names", nargs="*", metavar="NAME", help=f"of {', '.join(ALL)} (all)")
    parser.add_argument("--config", type=Path, action="append", help="config file(s) to run")
    parser.add_argument("--set", action="append", default=[], help="KEY=VALUE for every run")
    parser.add_argument("--max-minutes", type=float, default=None, help="training budget per run")
    parser.add_argument("--device", default="cpu", help="cpu (default), cuda or auto")
    parser.add_argument("--json", type=Path, default=None, help="append the lines to this file")
    parser.add_argument("--keep", type=Path, default=None, help="keep the runs in DIR/NAME-seedS")
    parser.add_argument("--maps", action="store_true", help="write test_maps.json beside a run")
    args = parser.parse_args(argv)
    unknown = [n for n in args.names if n not in ALL]
    if unknown:
        parser.error(f"unknown run {unknown[0]!r}; the runs: {', '.join(ALL)}")
    _data_dir()
    torch.set_num_threads(1)
    if args.config:
        runs = [(c.stem, c, []) for c in args.config]
    else:
        runs = []
        for name in args.names or ALL:
            base, sets = DERIVED.get(name, (name, []))
            runs.append((name, REPO / "configs" / f"{base}.yaml", list(sets)))
    failed = 0
    for name, config, sets in runs:
        sets = [*sets, f"train.device={args.device}", *args.set]
        if args.max_minutes is not None:
            sets.append(f"train.max_minutes={args.max_minutes}")
        with tempfile.TemporaryDirectory(prefix="attnkit-sst-") as tmp:
            out = Path(tmp) / name
            if args.keep is not None:
                out = args.keep / f"{name}-seed{_seed_of(sets)}"
            try:
                line = run_one(name, config, sets, out, args.maps)
            except Exception as exc:  # noqa: BLE001 - one failed run must not stop the others
                line, failed = {"config": name, "error": f"{type(exc).__name__}: {exc}"}, 1
        text = json.dumps(line)
        print(text, flush=True)
        if args.json is not None:
            with open(args.json, "a", encoding="utf-8") as handle:
                handle.write(text + "\n")
    return failed


if __name__ == "__main__":
    sys.exit(main())
