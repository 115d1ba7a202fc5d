"""Rebuild the model zoo that ships with attnkit (``attnkit zoo``, ``--model zoo:NAME``).

Each entry of :data:`RECIPES` is one of attnkit's own experiment files with a few overrides: a
smaller model (the zoo stays small enough to ship as package data), a fixed seed and a fixed
budget of epochs (no wall clock, so a rerun on the same machine gives the same weights). The
script trains it with one thread, scores the best checkpoint on the test split, copies the
checkpoint (weights, config, vocabularies; no optimizer state) into
``src/attnkit/zoo/models/NAME`` and records its score in ``src/attnkit/zoo/models/index.json``.

    python benchmarks/zoo.py                      # every recipe, one after the other
    python benchmarks/zoo.py numbers-bahdanau     # one of them

Prints one JSON line per model (name, test score, updates, parameters, minutes).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("MKL_NUM_THREADS", "1")

ROOT = Path(__file__).resolve().parents[1]
ZOO = ROOT / "src" / "attnkit" / "zoo" / "models"

#: a small RNN: what every RNN recipe of the zoo overrides
SMALL_RNN = [
    "model.embedding_dim=32",
    "model.encoder_hidden=64",
    "model.decoder_hidden=128",
]
#: deterministic budget: epochs only, no clock, evaluations once an epoch, one thread
BUDGET = ["train.max_minutes=null", "train.threads=1", "train.seed=1", "train.tensorboard=false"]

RECIPES: dict[str, dict] = {
    **{
        f"numbers-{att}": {
            "config": f"configs/numbers_{att.replace('-', '_')}.yaml",
            "overrides": [
                *SMALL_RNN,
                *([] if att == "none" else ["model.attention_dim=64"]),
                "train.epochs=15",
                "train.patience=null",
            ],
            "about": "number words (en/de/fr/es) -> digits, bi-GRU "
            + ("encoder-decoder without attention" if att == "none" else f"+ {att} attention"),
        }
        for att in (
            "bahdanau",
            "luong-general",
            "none",
            "luong-dot",
            "luong-concat",
            "scaled-dot",
            "multihead",
        )
    },
    "dates-bahdanau": {
        "config": "configs/dates_bahdanau.yaml",
        "overrides": [
            *SMALL_RNN,
            "model.attention_dim=64",
            "data.train_size=6000",
            "train.epochs=6",
            "train.patience=null",
        ],
        "about": "dates in 8 locales and 8 formats -> ISO 8601, bi-GRU + bahdanau attention",
    },
    "numbers-transformer": {
        "config": "configs/numbers_transformer.yaml",
        "overrides": [
            "model.embedding_dim=64",
            "model.ff_dim=128",
            "train.epochs=40",
            "train.patience=null",
        ],
        "about": "number words -> digits, a 2+2-layer Transformer (4 heads, width 64)",
    },
}
#: the order `python benchmarks/zoo.py` builds them in (the first two open `attnkit serve`)
ORDER = list(RECIPES)


def build(name: str, runs: Path) -> dict:
    import torch

    import attnkit

    torch.set_num_threads(1)
    recipe = RECIPES[name]
    began = time.time()
    run = attnkit.train(
        ROOT / recipe["config"],
        overrides=[*recipe["overrides"], *BUDGET, "train.progress=false"],
        output_dir=runs / name,
        overwrite=True,
    )
    minutes = (time.time() - began) / 60
    target = ZOO / name
    shutil.rmtree(target, ignore_errors=True)
    target.mkdir(parents=True)
    for item in sorted(run.best.iterdir()):
        if item.is_file() and item.name != "trainer.safetensors":
            shutil.copy2(item, target / item.name)
    last = json.loads((run.last / "trainer.json").read_text())["state"]
    best = json.loads((run.best / "trainer.json").read_text())["state"]
    return {
        "name": name,
        "about": recipe["about"],
        "config": recipe["config"],
        "overrides": recipe["overrides"] + BUDGET,
        "updates": last["step"],
        "best_update": best["step"],
        "train_minutes": round(minutes, 2),
        **scored(name),
    }


def scored(name: str) -> dict:
    """The zoo model's parameters and test-set scores (greedy), as ``index.json`` holds them."""
    import attnkit

    model = attnkit.load(ZOO / name, device="cpu")
    with tempfile.TemporaryDirectory() as out:
        scores = model.evaluate(split="test", beam=1, out=out).to_dict()
    metric = scores["metric"]
    alignment = scores.get("alignment", {}).get("own_output", {})
    return {
        "parameters": sum(p.numel() for p in model.translator.model.parameters()),
        "test": {
            "metric": metric,
            "value": scores["greedy"][metric],
            "percent": metric in PERCENT,
            "items": scores["greedy"]["items"],
            "aer": alignment.get("aer"),
        },
    }


#: metrics given in percent
PERCENT = ("exact_match", "accuracy", "wer", "per", "cer", "error")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("names", nargs="*", help=f"recipes to build (default: all): {ORDER}")
    parser.add_argument("--runs", type=Path, default=Path("runs/zoo"), help="training runs")
    parser.add_argument(
        "--rescore",
        action="store_true",
        help="train nothing: score the committed models again and rewrite their test scores",
    )
    args = parser.parse_args(argv)
    unknown = [n for n in args.names if n not in RECIPES]
    if unknown:
        sys.exit(f"unknown recipe(s) {unknown}; known: {ORDER}")
    index_path = ZOO / "index.json"
    index = json.loads(index_path.read_text()) if index_path.exists() else {}
    for name in args.names or (list(index) if args.rescore else ORDER):
        if args.rescore:
            entry = {k: v for k, v in index[name].items() if k != "scores"} | scored(name)
            entry["about"] = RECIPES[name]["about"]
        else:
            entry = build(name, args.runs)
        index[name] = entry
        ordered = {n: index[n] for n in ORDER if n in index}
        index_path.write_text(json.dumps(ordered, indent=1) + "\n")
        print(json.dumps(entry), flush=True)


if __name__ == "__main__":
    main()
