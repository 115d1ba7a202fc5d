"""What ``attnkit evaluate`` prints, a short table of its ``scores.json`` for a person, and where
it writes by default (:func:`default_eval_dir`), for every family alike."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from attnkit.zoo import run_parent

SIZES = ("items", "sentences", "words")  # how many were scored, per metric family
TIMINGS = ("decode_s", "inputs_per_s")


def scores_table(scores: dict) -> str:
    """One line saying what was scored, a row per decoding (greedy, beamK) with the deciding
    metric first, the alignment figures where the task has gold links, and where it all went."""
    runs = [name for name in scores if name == "greedy" or name.startswith("beam")]
    if not runs:
        return ""
    first = scores[runs[0]]
    metric = scores.get("metric")
    columns = [k for k in first if k not in SIZES + TIMINGS]
    if metric in columns:  # the one that decides comes first
        columns.remove(metric)
        columns.insert(0, metric)
    size = next((f"{first[k]} {k}" for k in SIZES if k in first), "")
    model = scores["model"] if isinstance(scores["model"], str) else " + ".join(scores["model"])
    scored = scores.get("split") or ", ".join((scores.get("files") or {}).values())
    lines = [f"{model} on {scored} ({scores['task']}, {size})"]
    if metric is not None:
        better = "higher" if scores.get("higher_is_better", True) else "lower"
        lines[0] += f": {metric} decides, {better} is better"
    header = ["decoding", *columns, "inputs/s"]
    rows = [
        [
            run,
            *(_number(scores[run].get(k)) for k in columns),
            _number(scores[run].get("inputs_per_s")),
        ]
        for run in runs
    ]
    widths = [max(len(str(row[i])) for row in [header, *rows]) for i in range(len(header))]
    for row in [header, *rows]:
        cells = [str(row[0]).ljust(widths[0])] + [
            str(cell).rjust(width) for cell, width in zip(row[1:], widths[1:])
        ]
        lines.append("  ".join(cells))
    for kind, figures in (scores.get("alignment") or {}).items():
        if isinstance(figures, dict) and "aer" in figures:
            lines.append(
                f"alignment ({kind.replace('_', ' ')}): AER {figures['aer']}%, argmax in gold "
                f"span {figures['argmax_in_span']}%"
            )
    heads = [
        h for h in (scores.get("alignment") or {}).get("per_head") or [] if h["aer"] is not None
    ]
    if heads:  # best first
        best, worst = heads[0], heads[-1]
        lines.append(
            f"alignment per head (teacher forced): best layer {best['layer']} head "
            f"{best['head']} AER {best['aer']}%, worst layer {worst['layer']} head "
            f"{worst['head']} AER {worst['aer']}% (all {len(heads)} in scores.json)"
        )
    if "out" in scores:
        lines.append(f"hypotheses, scores.json and report.html in {scores['out']}")
    return "\n".join(lines)


def _number(value) -> str:
    if value is None:
        return "-"
    return f"{value:.2f}" if isinstance(value, float) else str(value)


def default_eval_dir(model_dirs: Sequence[Path], split: str) -> Path:
    """``RUN/eval/CHECKPOINT-SPLIT`` for the checkpoint ``RUN/CHECKPOINT`` (runs/x/eval/best-test;
    a zoo model's: runs/zoo/eval/NAME-SPLIT);
    ``RUN/eval/CHECKPOINT-SPLIT-ensembleN`` for an ensemble of N whose first is RUN/CHECKPOINT."""
    first = Path(model_dirs[0])
    first = first if first.name not in ("", ".", "..") else first.resolve()
    suffix = "" if len(model_dirs) == 1 else f"-ensemble{len(model_dirs)}"
    return run_parent(first) / "eval" / f"{first.name}-{split}{suffix}"
