#!/usr/bin/env python3
"""Attention against gradient saliency, both against the gold links: one row per checkpoint.

    python benchmarks/saliency_table.py runs/table/numbers_*/best --count 400
    python benchmarks/saliency_table.py runs/table/dates_*/best --count 400 --out runs/saliency

Each checkpoint (of a task with gold alignments: numbers, dates) is explained with
``attnkit explain --split test --count N --reference`` (the model forced along the first N test
references; ``--method``, default gradient) into ``OUT/<run name>``. Prints each explain's
``scores.json`` as one JSON line, then a Markdown table for docs/RESULTS.md: AER of the attention
and of the saliency against the gold links, argmax in the gold span for each, how often their
argmaxes agree, their mean rank correlation per output step, and the saliency's entropy. A model
without attention has a saliency row alone.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))  # machine_info beside this script
from machine_info import one_line  # noqa: E402

from attnkit.checkpoint import read_config  # noqa: E402
from attnkit.explain.saliency import METHODS  # noqa: E402


def explain(model: Path, out: Path, count: int, method: str) -> dict:
    """``attnkit explain`` of the first ``count`` test references; its scores.json."""
    cmd = [sys.executable, "-m", "attnkit", "explain", "--model", str(model), "--split", "test"]
    cmd += ["--count", str(count), "--reference", "--method", method, "--pictures", "3"]
    done = subprocess.run([*cmd, "--out", str(out)], capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed: {done.stderr.strip()[-500:]}")
    return json.loads((out / "scores.json").read_text(encoding="utf-8"))


def attention_name(model: Path) -> str:
    """The checkpoint's ``model.attention`` (a Transformer: ``transformer``)."""
    cfg = read_config(model)["model"]
    return "transformer" if cfg.get("arch") == "transformer" else cfg["attention"]


def row(name: str, scores: dict) -> str:
    sal = scores.get("saliency")
    if not isinstance(sal, dict):
        raise SystemExit(f"{scores['model']}: no gold links to score against (numbers, dates)")
    att = scores["attention"] if isinstance(scores["attention"], dict) else None
    if att is None:
        cells = ["no attention", sal["aer"], f"- / {sal['argmax_in_span']}", "-", "-"]
    else:
        cells = [
            att["aer"],
            sal["aer"],
            f"{att['argmax_in_span']} / {sal['argmax_in_span']}",
            f"{scores['argmax_agreement']}%",
            scores["rank_correlation"],
        ]
    return "| " + " | ".join(map(str, [name, *cells, sal["entropy_normalised"]])) + " |"


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("models", nargs="+", type=Path, help="checkpoint directories")
    ap.add_argument("--count", type=int, default=400, help="test references explained (max 500)")
    ap.add_argument(
        "--method",
        default="gradient",
        choices=METHODS,
    )
    ap.add_argument("--out", type=Path, default=Path("runs/saliency_table"))
    args = ap.parse_args()
    rows = []
    for model in args.models:
        name = model.parent.name  # the run directory: numbers_bahdanau, ...
        scores = explain(model, args.out / name, args.count, args.method)
        print(json.dumps(scores), flush=True)
        rows.append(row(f"{name} ({attention_name(model)})", scores))
    print(f"\n{args.method} saliency, {args.count} test references each; {one_line()}\n")
    print(
        "| model | AER attention | AER saliency | argmax in span, attention / saliency "
        "| argmax agreement | rank correlation | entropy 0-1, saliency |"
    )
    print("|---|---|---|---|---|---|---|")
    print("\n".join(rows))


if __name__ == "__main__":
    main()
