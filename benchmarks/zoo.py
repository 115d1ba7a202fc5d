"""Rebuild the model zoo that ships with attnkit (``attnkit zoo``, ``--model zoo:NAME``).

Each entry of :data:`RECIPES` is one of attnkit's own experiment files with a few overrides: a
smaller model (the zoo stays small enough to ship as package data), a fixed seed and a fixed
budget of epochs (no wall clock, so a rerun on the same machine gives the same weights). The
script trains it with one thread, scores the best checkpoint on the test split, copies the
checkpoint (weights, config, vocabularies; no optimizer state) into
``src/attnkit/zoo/models/NAME``, stores its weights as float16 (half the bytes; loading upcasts
them to float32) and records its test score, before and after, in
``src/attnkit/zoo/models/index.json``.

    python benchmarks/zoo.py                      # every recipe, one after the other
    python benchmarks/zoo.py numbers-bahdanau     # one of them
    python benchmarks/zoo.py --rescore            # train nothing: float16 weights, scores again

The vision models read MNIST from ``$ATTNKIT_DATA_DIR/mnist`` (or the user cache) and never
download it; the G2P, graph, sentence and memory models read ``cmudict/``, ``planetoid/``,
``sst/`` and ``babi/`` there. The pointer networks' instances are drawn from their configs' seed.

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

#: the vision models (MNIST from $ATTNKIT_DATA_DIR/mnist or the user cache): no download
VISION: dict[str, dict] = {
    "mnist-ram": {
        "config": "configs/ram_mnist28.yaml",
        "overrides": [
            "data.download=false",
            "model.hidden=128",
            "train.epochs=24",
            "train.patience=null",
            "train.fit_schedule_to_budget=false",
        ],
        "about": "28x28 MNIST, Recurrent Attention Model: 6 glimpses of 8x8, LSTM core 128",
    },
    "strips-reader": {
        "config": "configs/sat_multidigit.yaml",
        "overrides": [
            "data.download=false",
            "data.max_digits=3",
            "data.train_size=20000",
            "data.dev_size=1000",
            "data.test_size=2000",
            "model.channels=[16,32,64]",
            "model.hidden=128",
            "model.attention_dim=64",
            "model.dropout=0.0",
            "train.lr=0.002",
            "train.epochs=9",
            "train.patience=null",
            "train.fit_schedule_to_budget=false",
        ],
        "about": "strips of 1-3 MNIST digits -> the digit string, a Show-Attend-Tell reader",
    },
}

#: a pointer network of width 64 on 50,000 instances, 4 epochs (1,564 updates)
SMALL_POINTER = [
    "model.hidden=64",
    "model.attention_dim=64",
    "data.train_size=50000",
    "train.epochs=4",
]

#: the other families' models: a graph (Cora), a text classifier (SST-2), two memory networks
#: (bAbI task 1 alone, the 20 tasks jointly), two pointer networks
FAMILIES: dict[str, dict] = {
    **{
        f"cora-{att}": {
            "config": f"configs/cora_{att}.yaml",
            "overrides": ["data.download=false", "train.epochs=300", "train.patience=null"],
            "about": f"Cora citation graph, node classes: {name}, 8 heads x 8, the paper's recipe",
        }
        for att, name in (("gat", "GAT"), ("gatv2", "GATv2"))
    },
    "sst2-attention": {
        "config": "configs/sst2_bilstm_attention.yaml",
        "overrides": [
            "model.embedding_dim=64",
            "model.hidden=64",
            "model.attention_dim=32",
            "model.max_vocab=8000",
            "train.epochs=3",
            "train.patience=null",
            "train.average_checkpoints=0",
        ],
        "about": "SST-2 sentences -> positive/negative, BiLSTM 64 + additive attention",
    },
    **{
        f"babi-task{task}": {
            "config": "configs/babi_memn2n.yaml",
            "overrides": [f"data.task={task}", "train.device=cpu"],
            "about": f"bAbI task {task} ({what}), MemN2N: 3 hops, width 20",
        }
        for task, what in (
            (1, "single supporting fact"),
            (4, "two-argument relations"),
            (15, "basic deduction"),
            (20, "agents' motivations"),
        )
    },
    "babi-joint": {
        "config": "configs/babi_memn2n_joint.yaml",
        "overrides": [
            # the shipped schedule (30 epochs of linear start, then 60 halving every 15) at a
            # fifth of its length; not built yet: at load 12 on 2 cores it read 60 questions/s,
            # about 5 wall minutes an epoch
            "train.epochs=18",
            "train.linear_start=6",
            "train.lr_step_epochs=3",
            "train.device=cpu",
        ],
        "about": "the 20 bAbI tasks trained jointly, MemN2N: 3 hops, width 50, 18 epochs",
    },
    "pointer-sort10": {
        "config": "configs/pointer_sort10.yaml",
        "overrides": [*SMALL_POINTER, "train.patience=null", "train.device=cpu"],
        "about": "10 numbers -> their ascending order, a pointer network (bi-LSTM 64)",
    },
    "pointer-hull10": {
        "config": "configs/pointer_hull10.yaml",
        "overrides": [
            *SMALL_POINTER,
            "train.scheduler=cosine",
            "train.patience=null",
            "train.device=cpu",
        ],
        "about": "10 points -> their convex hull, a pointer network (bi-LSTM 64)",
    },
}

#: a real-language translator: Multi30k German -> English captions, the config's Transformer
#: (3 + 3 layers of width 256, 8,000 subwords a side), 16 epochs in bfloat16 autocast on one
#: CPU thread; shipped as the average of its 5 best evaluations, in float16 shards
TRANSLATOR: dict[str, dict] = {
    "multi30k-de-en": {
        "config": "configs/multi30k_de_en_transformer.yaml",
        "overrides": [
            "data.download=false",
            "train.precision=bf16",
            "train.epochs=16",
            "train.patience=null",
        ],
        "checkpoint": "averaged",
        "about": "Multi30k image captions, German -> English, a 3+3-layer Transformer (width 256)",
    },
}

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
    "g2p-cmudict": {
        "config": "configs/g2p_cmudict.yaml",
        "overrides": [
            "data.download=false",
            "model.embedding_dim=64",
            "model.encoder_hidden=128",
            "model.encoder_layers=1",
            "model.decoder_hidden=192",
            "model.attention_dim=128",
            "model.dropout=0.1",
            "train.epochs=8",
            "train.eval_every=0",
            "train.patience=null",
            "train.average_checkpoints=0",
        ],
        "about": "CMUdict words -> phones (G2P), bi-LSTM 128 + LSTM 192, additive attention",
    },
    **VISION,
    **FAMILIES,
    **TRANSLATOR,
}
#: the order `python benchmarks/zoo.py` builds them in (the first two open `attnkit serve`)
ORDER = list(RECIPES)


def build(name: str, runs: Path) -> dict:
    import torch

    import attnkit

    torch.set_num_threads(1)
    recipe = RECIPES[name]
    began, cpu = time.time(), time.process_time()
    run = attnkit.train(
        ROOT / recipe["config"],
        overrides=[*recipe["overrides"], *BUDGET, "train.progress=false"],
        output_dir=runs / name,
        overwrite=True,
    )
    minutes, cpu_minutes = (time.time() - began) / 60, (time.process_time() - cpu) / 60
    return collect(name, Path(run.best).parent, round(minutes, 2), round(cpu_minutes, 2))


def collect(name: str, run: Path, minutes: float | None, cpu_minutes: float | None) -> dict:
    """The zoo model ``name`` taken from its finished training run ``run``: its best
    checkpoint (or the one its recipe's ``checkpoint`` names, e.g. ``averaged``) copied into
    the zoo (no optimizer state), stored as float16 and scored; its row of ``index.json``.
    ``minutes``: the training's wall time (None: the run's own count)."""
    recipe = RECIPES[name]
    target = ZOO / name
    shutil.rmtree(target, ignore_errors=True)
    target.mkdir(parents=True)
    for item in sorted((run / recipe.get("checkpoint", "best")).iterdir()):
        if item.is_file() and item.name != "trainer.safetensors":
            shutil.copy2(item, target / item.name)
    last, best = (_trainer_state(run / checkpoint) for checkpoint in ("last", "best"))
    if minutes is None and "elapsed_s" in last:
        minutes = round(last["elapsed_s"] / 60, 2)
    return {
        "name": name,
        "about": recipe["about"],
        "config": recipe["config"],
        "overrides": recipe["overrides"] + BUDGET,
        "updates": last["step"],
        "best_update": best["step"],
        "train_minutes": minutes,
        "train_cpu_minutes": cpu_minutes,
        **stored_half(name),
    }


def _trainer_state(checkpoint: Path) -> dict:
    """A checkpoint's trainer counters, whichever layout wrote them."""
    import dataclasses

    from attnkit.training.state import read_state

    return dataclasses.asdict(read_state(checkpoint))


def stored_half(name: str) -> dict:
    """Store the zoo model's weights as float16 (half the bytes; loading upcasts them), in
    shards where one file would exceed the package's bound, and its scores as :func:`scored`
    gives them, with the deciding test score of its float32 weights
    (``test.float32_value``) measured before. A model stored half already is only scored."""
    from attnkit.checkpoint.half import write_half
    from attnkit.checkpoint.shards import SHIPPED_FILE_BYTES, stored_as_half_weights, write_shards

    full = None
    if not stored_as_half_weights(ZOO / name):
        full = scored(name)["test"]["value"]
        write_half(ZOO / name)
        if (ZOO / name / "model.safetensors").stat().st_size > SHIPPED_FILE_BYTES:
            write_shards(ZOO / name)  # no file of the package above the bound
    entry = scored(name)
    if full is not None:
        entry["test"]["float32_value"] = full
    return entry


def scored(name: str) -> dict:
    """The zoo model's parameters and test-set scores, as ``index.json`` holds them."""
    import attnkit

    model = attnkit.load(ZOO / name, device="cpu")
    return SCORERS[model.family](model)


def _seq2seq_scores(model) -> dict:
    """A seq2seq model's test scores, greedy decoding (and its AER where the task has gold
    links, its phone error rate ``per`` where the task is G2P)."""
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
            "items": _scored_size(scores["greedy"]),
            "aer": alignment.get("aer"),
            **{key: scores["greedy"][key] for key in ("per",) if key in scores["greedy"]},
        },
    }


def _scored_size(scores: dict) -> int:
    """How many a seq2seq score was taken over: items, sentences or (G2P) words."""
    from attnkit.evaluation.summary import SIZES

    return next(scores[size] for size in SIZES if size in scores)


def _vision_scores(model) -> dict:
    """A vision model's test accuracy (whole-string for strips; RAM averages its configured
    glimpse paths, seeded as ``attnkit evaluate`` seeds them)."""
    with tempfile.TemporaryDirectory() as out:
        scores = model.evaluate(split="test", out=out).to_dict()
    return {
        "family": "vision",
        "parameters": sum(p.numel() for p in model.net.parameters()),
        "test": {
            "metric": "accuracy",
            "value": round(100 * scores["accuracy"], 2),  # evaluate gives a fraction
            "percent": True,
            "items": scores["images"],
            "aer": None,
        },
    }


def _test_row(model, metric: str, value: float, items: int, **more) -> dict:
    """The ``index.json`` scores of a model whose network is ``model.net``."""
    return {
        "family": model.family,
        "parameters": sum(p.numel() for p in model.net.parameters()),
        "test": {
            "metric": metric,
            "value": value,
            "percent": True,
            "items": items,
            "aer": None,
            **more,
        },
    }


def _graph_scores(model) -> dict:
    """A graph model's test-node accuracy (percent already)."""
    with tempfile.TemporaryDirectory() as out:
        scores = model.evaluate(split="test", out=out).to_dict()
    return _test_row(model, "accuracy", scores["accuracy"], scores["nodes"])


def _text_scores(model) -> dict:
    """A text classifier's test-sentence accuracy."""
    with tempfile.TemporaryDirectory() as out:
        scores = model.evaluate(split="test", out=out).to_dict()
    return _test_row(model, "accuracy", round(100 * scores["accuracy"], 2), scores["sentences"])


def _memnet_scores(model) -> dict:
    """A memory network's mean test error over its tasks, and the tasks failed (> 5%)."""
    with tempfile.TemporaryDirectory() as out:
        scores = model.evaluate(split="test", out=out).to_dict()
    failed = scores.get("failed_tasks", scores.get("failed", []))
    return _test_row(
        model,
        "mean_error_pct",
        scores["mean_error_pct"],
        scores["questions"],
        failed_tasks=len(failed) if isinstance(failed, list) else failed,
    )


def _pointer_scores(model) -> dict:
    """A pointer network's greedy test figures: exact match (and the task's other figures)."""
    scores = model.evaluate(split="test", beam=1).to_dict()["greedy"]
    return _test_row(model, "exact_match", scores["exact_match"], scores["items"])


#: a loaded model's family -> its scores for ``index.json``
SCORERS = {
    "seq2seq": _seq2seq_scores,
    "vision": _vision_scores,
    "graph": _graph_scores,
    "text": _text_scores,
    "memnet": _memnet_scores,
    "pointer": _pointer_scores,
}

#: metrics given in percent
PERCENT = ("exact_match", "accuracy", "wer", "per", "cer", "error")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("names", nargs="*", help=f"recipes to build (default: all): {ORDER}")
    parser.add_argument("--runs", type=Path, default=Path("runs/zoo"), help="training runs")
    parser.add_argument(
        "--collect",
        action="store_true",
        help="train nothing: take the named models from their finished runs under --runs (a "
        "build whose scoring failed), store them as float16, score and index them",
    )
    parser.add_argument(
        "--rescore",
        action="store_true",
        help="train nothing: store the committed models' weights as float16 where they are "
        "float32 (scoring them before and after) and rewrite their test scores",
    )
    args = parser.parse_args(argv)
    unknown = [n for n in args.names if n not in RECIPES]
    if unknown:
        sys.exit(f"unknown recipe(s) {unknown}; known: {ORDER}")
    index_path = ZOO / "index.json"
    index = json.loads(index_path.read_text()) if index_path.exists() else {}
    for name in args.names or (list(index) if args.rescore else ORDER):
        if args.rescore:
            kept = index[name].get("test", {}).get("float32_value")
            entry = {k: v for k, v in index[name].items() if k != "scores"} | stored_half(name)
            entry["about"] = RECIPES[name]["about"]
            if kept is not None:
                entry["test"].setdefault("float32_value", kept)
        elif args.collect:
            entry = collect(name, args.runs / name, None, None)
        else:
            entry = build(name, args.runs)
        # read again: another build may have written its row meanwhile
        index = json.loads(index_path.read_text()) if index_path.exists() else {}
        index[name] = entry
        ordered = {n: index[n] for n in ORDER if n in index}
        index_path.write_text(json.dumps(ordered, indent=1) + "\n")
        print(json.dumps(entry), flush=True)


if __name__ == "__main__":
    main()
