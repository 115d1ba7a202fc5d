"""Scoring a graph checkpoint on a split of its nodes: scores.json, predictions.tsv and a
self-contained report.html (the metrics, the attention entropy against uniform attention, and the
neighbourhoods of the first wrong and right test nodes, one panel per head, each beside the
gradient saliency of its prediction)."""

from __future__ import annotations

import base64
import io
import json
from pathlib import Path

import numpy as np

from attnkit.evaluation.summary import default_eval_dir
from attnkit.explain import graph as explain
from attnkit.viz import graph as pictures
from attnkit.viz import visual
from attnkit.viz.report import _CSS, page_head

REPORT_ERRORS = 4  # wrong nodes pictured in the report
REPORT_RIGHT = 2  # right ones, for comparison
#: model.type -> model.attention -> the model's name in scores and titles
MODEL_NAMES = {"gat": {"gat": "gat", "gatv2": "gatv2", "none": "const-gat"}}


def score_nodes(cfg, graph, model, data, split: str) -> tuple[dict, np.ndarray, np.ndarray]:
    """The scores of ``split`` and its nodes' ids and predictions."""
    log_probs, layers = explain.forward(model, data)
    mask = data.masks[split].cpu()
    ids = np.flatnonzero(mask.numpy())
    predicted = log_probs.argmax(-1).cpu().numpy()[ids]
    gold = graph.y.numpy()[ids]
    right = int((predicted == gold).sum())
    nodes = max(len(ids), 1)
    scores = {
        "model": MODEL_NAMES.get(cfg.model.type, {}).get(cfg.model.attention, cfg.model.type),
        "task": graph.name,
        "split": split,
        "nodes": len(ids),
        "accuracy": round(100.0 * right / nodes, 2),
        "error_pct": round(100.0 * (len(ids) - right) / nodes, 2),
        "errors": len(ids) - right,
    }
    if layers:
        entropy, uniform = explain.entropies(model, data)
        scores["attention_entropy"] = round(float(entropy.mean()), 4)
        scores["uniform_entropy"] = round(float(uniform.mean()), 4)
    return scores, ids, predicted


def _png(figure) -> str:
    buffer = io.BytesIO()
    visual.render(figure).save(buffer, format="PNG")
    figure.clear()
    return "data:image/png;base64," + base64.b64encode(buffer.getvalue()).decode("ascii")


def _node_section(graph, model, data, node: int) -> str:
    found = explain.explain_node(model, graph, data, node)
    view = explain.neighbourhood_of(graph, found)
    parts = [f'<img alt="node {node}" src="{_png(pictures.neighbourhood_figure(view))}">']
    if found["attention_into"] is not None:
        names = [graph.nodes[int(found["nodes"][j])] for j in found["direct"]]
        rho = found["agreement"]["rank_correlation"]
        shown = "-" if rho is None else f"{rho:.2f}"
        title = f"node {graph.nodes[node]}: Spearman's rho {shown}"
        figure = pictures.saliency_figure(
            names, found["attention_into"], found["saliency"][found["direct"]], title
        )
        parts.append(f'<img alt="saliency of node {node}" src="{_png(figure)}">')
    return '<div class="img">' + "".join(parts) + "</div>"


def write_graph_report(path: Path, cfg, graph, model, data, scores, ids, predicted) -> Path:
    """report.html: metrics, config, the entropy histogram, a few nodes' neighbourhoods."""
    title = f"attnkit evaluate: {scores['model']} ({graph.name}, {scores['split']})"
    notes = (
        f"{scores['errors']:,} of {scores['nodes']:,} nodes wrong. Edges are shaded and widened by "
        "the attention each carries into its target; wrong nodes first."
    )
    parts = page_head(title, _CSS, scores, cfg.to_dict(), notes)
    if model.has_attention:
        entropy, uniform = explain.entropies(model, data)
        figure = pictures.entropy_figure(entropy, uniform, "first layer: ")
        parts += ["<h2>Attention entropy</h2>", f'<img alt="entropy" src="{_png(figure)}">']
    wrong = ids[predicted != graph.y.numpy()[ids]][:REPORT_ERRORS]
    right = ids[predicted == graph.y.numpy()[ids]][:REPORT_RIGHT]
    parts.append(f"<h2>Nodes ({len(wrong)} wrong, {len(right)} right)</h2>")
    parts += [_node_section(graph, model, data, int(n)) for n in [*wrong, *right]]
    parts.append("</body></html>")
    path.write_text("\n".join(parts) + "\n", encoding="utf-8")
    return path


def evaluate_to_dir(checkpoint: Path, split: str, out_dir: Path | None, loaded: tuple) -> dict:
    """Score ``loaded`` = (cfg, graph, model, device graph) on ``split`` and write scores.json,
    predictions.tsv and report.html to ``out_dir`` (default ``RUN/eval/CHECKPOINT-SPLIT``)."""
    cfg, graph, model, data = loaded
    scores, ids, predicted = score_nodes(cfg, graph, model, data, split)
    out = Path(out_dir) if out_dir is not None else default_eval_dir([checkpoint], split)
    out.mkdir(parents=True, exist_ok=True)
    scores = {"checkpoint": str(checkpoint), **scores}
    (out / "scores.json").write_text(json.dumps(scores, indent=1), encoding="utf-8")
    rows = ["node\tlabel\tpredicted\tright"]
    for node, answer in zip(ids, predicted, strict=True):
        gold = int(graph.y[node])
        rows.append(
            f"{graph.nodes[node]}\t{graph.classes[gold]}\t{graph.classes[answer]}\t"
            f"{int(gold == answer)}"
        )
    (out / "predictions.tsv").write_text("\n".join(rows) + "\n", encoding="utf-8")
    write_graph_report(out / "report.html", cfg, graph, model, data, scores, ids, predicted)
    return {**scores, "out": str(out)}


def summary(scores: dict) -> str:
    """Lines for a person: the accuracy and where the files are."""
    out = Path(scores["out"])
    entropy = ""
    if "attention_entropy" in scores:
        entropy = (
            f"\nattention entropy {scores['attention_entropy']:.3f} nats (uniform over the "
            f"degree: {scores['uniform_entropy']:.3f})"
        )
    return (
        f"{scores['model']} on {scores['task']} ({scores['split']}): accuracy "
        f"{scores['accuracy']:.2f}% ({scores['errors']:,} of {scores['nodes']:,} nodes wrong)"
        f"{entropy}\nscores: {out / 'scores.json'}\nreport: {out / 'report.html'}"
    )


__all__ = ["evaluate_to_dir", "summary"]
