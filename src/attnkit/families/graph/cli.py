"""The graph family's command-line hooks: what ``attnkit plot``, ``evaluate`` and ``explain``
do with its checkpoints (the parsed arguments in). A command with no function here does not
apply to the family."""

from __future__ import annotations

import json
from pathlib import Path

from attnkit.errors import AttnkitError
from attnkit.families.commands import refuse_decoding_options
from attnkit.families.graph.model import GraphModel


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
    """Each --node's attention beside its saliency, as JSON; -o draws the first one's."""
    if not args.node:
        raise AttnkitError("graph models: give --node N (repeatable)")
    if args.texts or args.split:
        raise AttnkitError("graph models: explain nodes with --node N, not TEXT or --split")
    model = GraphModel.load(args.model, args.device)
    found = [model.explain_node(node) for node in args.node]
    if args.output is not None:
        found[0].plot(args.output)
    keep = ("node", "label", "prediction", "agreement", "neighbours", "saliency")
    return json.dumps([{k: v for k, v in e.to_dict().items() if k in keep} for e in found])
