"""``attnkit faithfulness``'s output: the tests of every example summed up, written as
scores.json and report.html, and printed as a short table.

:func:`run_subjects` questions each example (:func:`attnkit.evaluation.faithfulness.question`),
:func:`summarize` averages over every unit of every example:

* per ranking: comprehensiveness and sufficiency at each k and their AOPC (higher
  comprehensiveness and lower sufficiency = more faithful);
* per attention map and reference: the mean Kendall tau and Spearman rho, and the share of units
  whose tau is significant (p < 0.05; Jain & Wallace's Table 2 reports these);
* the permutation test: the median output change over all units, and its mean in bins of the
  attention's peakedness (Jain & Wallace's Figure 4);
* the adversarial search: the mean and median of the largest JSD found within the output budget;
* the seconds each stage took.

Shapes: U units, K percentages.
"""

from __future__ import annotations

import base64
import html
import io
import json
import math
from collections.abc import Iterable
from pathlib import Path

import numpy as np

from attnkit.errors import AttnkitError
from attnkit.evaluation.faithfulness import ExampleScores, Options, Subject, question
from attnkit.evaluation.faithfulness_stats import ALPHA

#: the attention's largest weight, binned for the permutation test
PEAK_BINS = (0.0, 0.25, 0.5, 0.75, 1.0001)


def run_subjects(subjects: Iterable[Subject], options: Options) -> list[ExampleScores]:
    """Question every subject, in order."""
    return [question(subject, options) for subject in subjects]


def evaluate_subjects(
    subjects: Iterable[Subject], options: Options, out: Path | None, meta: dict
) -> dict:
    """Question every subject and sum up: ``meta`` + {"summary": ...}; with ``out``, also
    scores.json and report.html there (and "out" in the result)."""
    results = run_subjects(subjects, options)
    if not results:
        raise AttnkitError("faithfulness: no examples to question")
    summary = summarize(results)
    scores = {**meta, "summary": summary}
    if out is not None:
        write_outputs(Path(out), summary, results, meta)
        scores["out"] = str(out)
    return scores


def _mean(values) -> float | None:
    values = [v for v in values if v is not None and not math.isnan(v)]
    return round(float(np.mean(values)), 4) if values else None


def _erasure(results: list[ExampleScores]) -> dict:
    names = list(results[0].scores)
    out = {}
    for name in names:
        comp = np.concatenate([r.comprehensiveness[name].numpy() for r in results])  # (units, K)
        suff = np.concatenate([r.sufficiency[name].numpy() for r in results])
        out[name] = {
            "comprehensiveness": [round(float(x), 4) for x in comp.mean(0)],
            "sufficiency": [round(float(x), 4) for x in suff.mean(0)],
            "aopc_comprehensiveness": round(float(comp.mean()), 4),
            "aopc_sufficiency": round(float(suff.mean()), 4),
        }
    return out


def _agreement(results: list[ExampleScores]) -> dict:
    out = {}
    for pair in results[0].correlations:
        taus = [t for r in results for t in r.correlations[pair]["tau"]]
        ps = [p for r in results for p in r.correlations[pair]["tau_p"] if p is not None]
        rhos = [t for r in results for t in r.correlations[pair]["rho"]]
        out[pair] = {
            "tau": _mean(taus),
            "rho": _mean(rhos),
            "significant_share": round(sum(p < ALPHA for p in ps) / len(ps), 4) if ps else None,
            "units": len(ps),
        }
    return out


def _permutation(results: list[ExampleScores]) -> dict | None:
    tests = [r.permutation for r in results if r.permutation]
    if not tests:
        return None
    change = np.array([x for t in tests for x in t["median_tvd"]])
    peak = np.array([x for t in tests for x in t["max_attention"]])
    bins = []
    for low, high in zip(PEAK_BINS, PEAK_BINS[1:]):
        inside = (peak >= low) & (peak < high)
        mean = round(float(change[inside].mean()), 4) if inside.any() else None
        bins.append({"max_attention": [low, min(1.0, high)], "units": int(inside.sum()),
                     "mean_median_tvd": mean})  # fmt: skip
    return {
        "median_tvd": round(float(np.median(change)), 4),
        "mean_median_tvd": round(float(change.mean()), 4),
        "by_peakedness": bins,
        "permutations": tests[0]["permutations"],
    }


def _adversarial(results: list[ExampleScores]) -> dict | None:
    tests = [r.adversarial for r in results if r.adversarial]
    if not tests:
        return None
    found = np.array([x for t in tests for x in t["max_jsd"]])
    return {
        "mean_max_jsd": round(float(found.mean()), 4),
        "median_max_jsd": round(float(np.median(found)), 4),
        "share_above_half_ln2": round(float((found > 0.5 * math.log(2)).mean()), 4),
        "epsilon": tests[0]["epsilon"],
        "steps": tests[0]["steps"],
    }


def summarize(results: list[ExampleScores]) -> dict:
    """Every test averaged over every unit of every example (see the module docstring)."""
    timings: dict[str, float] = {}
    for r in results:
        for stage, seconds in r.timings.items():
            timings[stage] = timings.get(stage, 0.0) + seconds
    return {
        "examples": len(results),
        "units": sum(len(r.units) for r in results),
        "percents": list(results[0].percents),
        "erasure": _erasure(results),
        "agreement": _agreement(results),
        "permutation": _permutation(results),
        "adversarial": _adversarial(results),
        "seconds": {k: round(v, 3) for k, v in timings.items()},
    }


def table(summary: dict) -> str:
    """The short table ``attnkit faithfulness`` prints."""
    lines = [
        f"{summary['examples']} examples, {summary['units']} decisions",
        f"{'ranking':22} {'compr. AOPC':>11} {'suff. AOPC':>10}",
    ]
    for name, e in summary["erasure"].items():
        lines.append(f"{name:22} {e['aopc_comprehensiveness']:11.4f} {e['aopc_sufficiency']:10.4f}")
    for pair, a in summary["agreement"].items():
        if pair.startswith("attention~") and a["tau"] is not None:
            share = a["significant_share"]
            lines.append(f"tau {pair:30} {a['tau']:7.3f}  significant {100 * share:5.1f}%")
    if summary["permutation"]:
        lines.append(f"permutation: median output TVD {summary['permutation']['median_tvd']:.4f}")
    if summary["adversarial"]:
        a = summary["adversarial"]
        lines.append(f"adversarial: mean max JSD {a['mean_max_jsd']:.4f} (TVD <= {a['epsilon']})")
    return "\n".join(lines)


def plot_curves(summary: dict, path_or_ax=None):
    """Comprehensiveness and sufficiency against k, one line per ranking (matplotlib); to a
    file, into two given Axes, or a new figure. Returns the figure."""
    from matplotlib.figure import Figure

    if path_or_ax is None or isinstance(path_or_ax, str | Path):
        fig = Figure(figsize=(9, 3.4), layout="constrained")
        axes = fig.subplots(1, 2)
    else:
        axes = path_or_ax
        fig = axes[0].figure
    ks = summary["percents"]
    for name, e in summary["erasure"].items():
        style = "-" if name in ("attention", "rollout", "flow") else "--"
        axes[0].plot(ks, e["comprehensiveness"], style, marker="o", label=name)
        axes[1].plot(ks, e["sufficiency"], style, marker="o", label=name)
    for ax, title in zip(axes, ("comprehensiveness (higher: faithful)", "sufficiency (lower)")):
        ax.set_xscale("log")
        ax.set_xticks(ks, [f"{k}%" for k in ks])
        ax.set_xlabel("top k% erased / kept")
        ax.set_title(title, fontsize=9)
    axes[1].legend(fontsize=7, loc="best")
    if isinstance(path_or_ax, str | Path):
        fig.savefig(path_or_ax, dpi=96)
    return fig


def _png(summary: dict) -> str:
    buffer = io.BytesIO()
    fig = plot_curves(summary)
    fig.savefig(buffer, format="png", dpi=96)
    fig.clear()
    return base64.b64encode(buffer.getvalue()).decode("ascii")


def _html_table(header: list[str], rows: list[list]) -> str:
    def cell(x):
        return "" if x is None else html.escape(str(x))

    head = "".join(f"<th>{cell(h)}</th>" for h in header)
    body = "".join("<tr>" + "".join(f"<td>{cell(x)}</td>" for x in r) + "</tr>" for r in rows)
    return f"<table><tr>{head}</tr>{body}</table>"


def write_outputs(out: Path, summary: dict, results: list[ExampleScores], meta: dict) -> None:
    """scores.json (``meta``, the summary, every example) and report.html (the AOPC curves, the
    per-ranking table, rank agreement, permutation and adversarial results)."""
    out.mkdir(parents=True, exist_ok=True)
    payload = {**meta, "summary": summary, "examples": [r.to_dict() for r in results]}
    (out / "scores.json").write_text(json.dumps(payload, indent=1), encoding="utf-8")
    erasure = _html_table(
        ["ranking", *(f"compr. {k}%" for k in summary["percents"]), "compr. AOPC", "suff. AOPC"],
        [[n, *e["comprehensiveness"], e["aopc_comprehensiveness"], e["aopc_sufficiency"]]
         for n, e in summary["erasure"].items()],
    )  # fmt: skip
    agreement = _html_table(
        ["maps", "Kendall tau", "Spearman rho", "tau significant (p < 0.05)", "units"],
        [[p, a["tau"], a["rho"], a["significant_share"], a["units"]]
         for p, a in summary["agreement"].items()],
    )  # fmt: skip
    extra = ""
    if summary["permutation"]:
        perm = summary["permutation"]
        extra += f"<h2>Permutation ({perm['permutations']} per decision)</h2>" + _html_table(
            ["largest attention weight", "decisions", "mean of median output TVD"],
            [[f"{b['max_attention'][0]}-{b['max_attention'][1]}", b["units"],
              b["mean_median_tvd"]] for b in perm["by_peakedness"]],
        )  # fmt: skip
    if summary["adversarial"]:
        adv = summary["adversarial"]
        extra += "<h2>Adversarial attention</h2>" + _html_table(
            ["mean max JSD", "median max JSD", "share > ln2 / 2", "output TVD at most"],
            [[adv["mean_max_jsd"], adv["median_max_jsd"], adv["share_above_half_ln2"],
              adv["epsilon"]]],
        )  # fmt: skip
    title = html.escape(f"attnkit faithfulness: {meta.get('model', '')}")
    units = html.escape(meta.get("units", ""))
    page = f"""<!doctype html><html><head><meta charset="utf-8"><title>{title}</title>
<style>body{{font-family:sans-serif;margin:2em;max-width:70em}}table{{border-collapse:collapse;
margin:.5em 0 1.5em}}td,th{{border:1px solid #ccc;padding:.2em .6em;text-align:right}}
td:first-child,th:first-child{{text-align:left}}</style></head><body><h1>{title}</h1>
<p>{summary["examples"]} examples, {summary["units"]} decisions ({units}).
Erasing the top k% of positions by each ranking: comprehensiveness is the drop in the decided
output's probability (higher: the ranking found what the decision used), sufficiency the drop
when only those are kept (lower is better). AOPC is the mean over k (DeYoung et al. 2020).</p>
<img alt="comprehensiveness and sufficiency against k" src="data:image/png;base64,{_png(summary)}">
<h2>Erasure by ranking</h2>{erasure}<h2>Rank agreement (Jain &amp; Wallace 2019)</h2>{agreement}
{extra}<p>Seconds per stage: {html.escape(json.dumps(summary["seconds"]))}</p></body></html>"""
    (out / "report.html").write_text(page, encoding="utf-8")
