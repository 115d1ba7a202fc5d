"""The graph family's command-line hooks: what ``attnkit plot``, ``evaluate`` and ``explain``
do with its checkpoints (the parsed arguments in). A command with no function here does not
apply to the family."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from attnkit.errors import AttnkitError
from attnkit.families.commands import refuse_decoding_options
from attnkit.families.graph.model import GraphModel, NodeExplanation


def plot(args) -> None:
    asked = [args.node is not None, args.entropy, args.lookup]
    if sum(asked) != 1:
        raise AttnkitError("graph models: give one of --node N, --entropy, --lookup")
    if args.layer is not None or args.head is not None or args.grid or args.text:
        raise AttnkitError("graph models: --node N draws every head; no TEXT, --layer or --head")
    output = Path(args.output)
    if output.suffix.lower() not in (".png", ".svg"):
        raise AttnkitError(f"-o {output}: use a .png or .svg file name")
    model = GraphModel.load(args.model, "cpu")
    if args.node is not None:
        explained = model.explain_node(args.node)
        explained.plot(output)
        print(f"node {explained.node}: label {explained.label}, predicted {explained.prediction}")
    else:
        from attnkit.viz.visual import save_figure

        figure = model.entropy_figure() if args.entropy else model.lookup_figure()
        save_figure(figure, output)
    print(output)


def evaluate(args):
    refuse_decoding_options(args, "a graph model answers each node")
    return GraphModel.load(args.model[0], args.device).evaluate(args.split, args.out)


def explain(args) -> str:
    """Each --node's attention beside its saliency, as a table (--json: JSON); -o draws the first
    one's."""
    if not args.node:
        raise AttnkitError("graph models: give --node N (repeatable)")
    if args.texts or args.split:
        raise AttnkitError("graph models: explain nodes with --node N, not TEXT or --split")
    model = GraphModel.load(args.model, args.device)
    found = [model.explain_node(node) for node in args.node]
    if args.output is not None:
        found[0].plot(args.output)
    if not args.json:
        tables = [table(e) for e in found]
        return "\n\n".join(tables + ([f"picture: {args.output}"] if args.output else []))
    keep = ("node", "label", "prediction", "agreement", "neighbours", "saliency")
    return json.dumps([{k: v for k, v in e.to_dict().items() if k in keep} for e in found])


def table(e: NodeExplanation) -> str:
    """One node's explanation as lines: its prediction, the agreement of attention and saliency,
    and a row per direct neighbour (most attended first): its class, the last attention layer's
    weight into the node per head and their mean, and its saliency share."""
    mark = "right" if e.label == e.prediction else "wrong"
    lines = [f"node {e.node}: label {e.label}, predicted {e.prediction} ({mark})"]
    if e.agreement is not None:
        rho = e.agreement["rank_correlation"]
        same = "yes" if e.agreement["same_top_neighbour"] else "no"
        lines.append(
            f"attention and saliency: Spearman's rho {'-' if rho is None else f'{rho:.2f}'}, "
            f"same top neighbour: {same}"
        )
    into = [k for k, (_, t) in enumerate(e.edges.tolist()) if t == 0]
    weights = e.weights[-1][into] if e.weights else np.zeros((len(into), 0))  # (K', H)
    heads = weights.shape[1]
    rows = []
    for k, w in zip(into, weights, strict=True):
        s = int(e.edges[k][0])
        name = e.neighbours[s] + (" (self)" if s == 0 else "")
        rows.append((name, e.classes[s] if e.classes else "-", w, e.saliency[s]))
    if heads:
        rows.sort(key=lambda row: -float(row[2].mean()))
    wide = max([len("neighbour")] + [len(r[0]) for r in rows])
    cwide = max([len("class")] + [len(r[1]) for r in rows])
    columns = [f"head {h + 1}" for h in range(heads if heads > 1 else 0)]
    columns += ["attention"] if heads == 1 else (["mean"] if heads else [])
    lines.append(
        f"{'neighbour':{wide}s}  {'class':{cwide}s}"
        + "".join(f"{c:>10s}" for c in columns + ["saliency"])
    )
    for name, cls, w, sal in rows:
        values = list(w) if heads > 1 else []
        values += [float(w.mean())] if heads else []
        lines.append(
            f"{name:{wide}s}  {cls:{cwide}s}" + "".join(f"{v:10.3f}" for v in values + [sal])
        )
    far = sum(1 for h in e.hops if h == 2)
    if far:
        nodes = "node" if far == 1 else "nodes"
        lines.append(f"{far} {nodes} at two hops not listed (--json: every node's saliency)")
    return "\n".join(lines)
