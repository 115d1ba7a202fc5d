"""The two famous attention pictures, made by attnkit's own phrases task: "a beautiful dog" ->
"un perro bonito" (the adjective crosses the noun) and "la zone économique européenne" -> "the
European economic area" (the order reverses), each with its alignment error rate.

    python benchmarks/phrases_figures.py                # trains both, writes the figures
    python benchmarks/phrases_figures.py --runs /tmp/figs --json docs/results/phrases_cpu.json
    python benchmarks/phrases_figures.py --runs /tmp/figs --reuse   # redraw, no training

For each of configs/phrases_en_es.yaml and configs/phrases_fr_en.yaml: trains the model
(``attnkit.train``, its config's budget), translates the showcase phrase (held out of training
by the task), draws its attention with gold links outlined (``docs/images/phrases_*.png``), and
scores the test split (``Seq2SeqModel.evaluate``: exact match, AER of the model's own attention
and teacher forced). Prints and writes one JSON object: every score, the training time, the
machine.
"""

from __future__ import annotations

import argparse
import json
import platform
import time
from pathlib import Path

import attnkit
from attnkit.evaluation.alignment import alignment_metrics
from attnkit.viz import plot_heatmap

REPO = Path(__file__).resolve().parents[1]
FIGURES = {
    "phrases_en_es": ("a beautiful dog", "phrases_en_es.png"),
    "phrases_fr_en": ("la zone économique européenne", "phrases_fr_en.png"),
}


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=Path, default=REPO / "runs", help="run directories")
    parser.add_argument("--images", type=Path, default=REPO / "docs" / "images")
    parser.add_argument("--json", type=Path, default=None, help="also write the results here")
    parser.add_argument("--threads", type=int, default=1, help="torch threads for training")
    parser.add_argument(
        "--reuse", action="store_true", help="use RUNS/<config>/best where it exists: no training"
    )
    return parser.parse_args()


def figure(name: str, source: str, picture: str, args) -> dict:
    """Train one config, draw its showcase phrase, score its test split."""
    from attnkit.data.tasks.gold import gold_aligner

    start = time.perf_counter()
    best = args.runs / name / "best"
    if not (args.reuse and best.is_dir()):
        best = attnkit.train(
            REPO / "configs" / f"{name}.yaml",
            overrides={"train.threads": args.threads, "train.progress": False},
            output_dir=args.runs / name,
            overwrite=True,
        ).best
    seconds = time.perf_counter() - start
    model = attnkit.load(best)
    (t,) = model.translate(source)
    gold = gold_aligner(model.config.data)(source, t.output)
    example = alignment_metrics([(t.weights, gold)]) if gold is not None else {}
    scores = model.evaluate(split="test", beam=1, out=args.runs / name / "eval")
    aer = scores["alignment"]["teacher_forced"]["aer"]
    path = args.images / picture
    title = f"{source}\n-> {t.output}\nAER {example.get('aer')}% (test set: {aer}%)"
    plot_heatmap(t.record(), path=path, title=title).clear()
    return {
        "config": f"configs/{name}.yaml",
        "source": source,
        "output": t.output,
        "weights": t.weights.round(3).tolist(),
        "example_alignment": example,
        "test": {k: v for k, v in scores.to_dict().items() if k != "out"},
        "train_seconds": round(seconds, 1),
        "picture": str(path.relative_to(REPO)) if path.is_relative_to(REPO) else str(path),
    }


def main() -> None:
    args = parse_args()
    results = {name: figure(name, *spec, args) for name, spec in FIGURES.items()}
    results["machine"] = {"platform": platform.platform(), "processor": platform.processor()}
    text = json.dumps(results, indent=1, ensure_ascii=False)
    print(text)
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(text + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
