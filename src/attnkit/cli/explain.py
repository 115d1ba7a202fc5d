"""``attnkit explain``: attention beside gradient saliency, for typed inputs or a split's first
items (:meth:`attnkit.api.Seq2SeqModel.explain_report`)."""

from __future__ import annotations

import json
from pathlib import Path

from attnkit.cli.options import (
    add_command,
    device_option,
    model_option,
    saliency_method,
    threads_option,
)
from attnkit.errors import AttnkitError, writing


def add_parser(sub) -> None:
    p = add_command(
        sub,
        "explain",
        run,
        help="attention beside gradient saliency (implicit attention); graph models: --node N",
        description="For each input, force the model along its own output (or the reference, "
        "--reference) and draw the attention it pays beside the gradient saliency of every output "
        "token over the source (captum: gradient = the sequential Jacobian's norm, "
        "input x gradient, integrated gradients), on shared axes. Writes NNN.png, "
        "attention.json, saliency.json and scores.json (agreement of the two maps and, on the "
        "numbers and dates tasks, both scored against gold alignments) and report.html to --out; "
        "-o FILE draws one input's pair of maps to FILE alone. A model without "
        "attention (model.attention: none) gets its saliency alone. A text classifier's "
        "sentences get their words' attention beside their saliency (explanations.json, "
        "scores.json, report.html). A memory network (bAbI) explains the first --count questions "
        "of --split (default test): each hop's attention beside the saliency of the answer over "
        "the story's sentences.",
    )
    model_option(p, "seq2seq or text checkpoint directory")
    p.add_argument("texts", nargs="*", metavar="TEXT", help="inputs to explain")
    p.add_argument(
        "--split", choices=("dev", "test"), default=None, help="explain the first items of a split"
    )
    p.add_argument("--count", type=int, default=10, help="items of --split to explain (default 10)")
    p.add_argument(
        "--method",
        type=saliency_method,
        default="gradient",
        metavar="{gradient,input_x_gradient,integrated_gradients}",
        help="saliency method (default: gradient; hyphens work too: input-x-gradient)",
    )
    p.add_argument(
        "--reference", action="store_true", help="explain the references of --split, not outputs"
    )
    p.add_argument(
        "-o",
        "--output",
        type=Path,
        default=None,
        help="draw ONE input (one TEXT, or --split with --count 1) to this file (.png or .svg: "
        "its suffix is the format) and write nothing else; the scores are printed",
    )
    p.add_argument(
        "--format", choices=("png", "svg"), default=None, help="picture format of --out (png)"
    )
    p.add_argument("--pictures", type=int, default=None, help="--out: draw the first N (20)")
    p.add_argument(
        "--out", type=Path, default=None, help="output directory (default: RUN/explain/CKPT)"
    )
    p.add_argument(
        "--json",
        action="store_true",
        help="print the scores as one JSON object (as scores.json holds them) instead of a table",
    )
    p.add_argument(
        "--node",
        action="append",
        default=None,
        metavar="N",
        help="graph models: explain node N (repeatable): the attention over its neighbours beside "
        "the gradient saliency of its prediction over their features, and their agreement",
    )
    device_option(p)
    threads_option(p)


_ALONG = {"own output": "the model's own output", "reference": "the reference"}
#: the alignment measures the table shows, with the words it shows them by
MEASURES = {
    "aer": "alignment error rate vs gold (lower is better)",
    "argmax_in_span": "% of steps whose top source token is a gold one",
    "entropy_normalised": "entropy, normalised (0 sharp .. 1 flat)",
}


def table(scores: dict) -> str:
    """The scores of ``attnkit explain`` as a few lines: what was explained, the agreement of the
    two maps, each map against the gold links (where the task has them), and what was written."""
    lines = [
        f"explained {scores['examples']} input(s), forced along "
        f"{_ALONG[scores['explained']]}, saliency by {scores['method'].replace('_', ' ')}"
    ]
    if "argmax_agreement" in scores:
        lines.append(
            f"attention and saliency agree on the top source token at "
            f"{scores['argmax_agreement']:.2f}% of steps; rank correlation "
            f"{scores['rank_correlation']:.2f}"
        )
    maps = [m for m in ("attention", "saliency") if isinstance(scores.get(m), dict)]
    if maps:
        width = max(len(text) for text in MEASURES.values())
        lines.append(f"{'against the gold links':{width}s} " + "".join(f"{m:>11s}" for m in maps))
        for key, text in MEASURES.items():
            values = "".join(f"{scores[m].get(key, float('nan')):11.2f}" for m in maps)
            lines.append(f"{text:{width}s} {values}")
    if scores.get("attention") == "none":
        lines.append("the model has no attention: saliency alone")
    if "picture" in scores:
        lines.append(f"picture: {scores['picture']}")
    if "out" in scores:
        out = scores["out"]
        lines.append(f"written to {out}/: report.html, scores.json, the maps as data and pictures")
    return "\n".join(lines)


def run(args) -> None:
    from attnkit.api.loading import checkpoint_family

    family = checkpoint_family(args.model)
    if family not in EXPLAINERS:
        raise AttnkitError(
            f"--model {args.model}: explain is for {', '.join(EXPLAINERS)} checkpoints"
        )
    with writing(args.out or args.output or "the explain directory", ""):
        print(EXPLAINERS[family](args))


def _seq2seq(args) -> str:
    from attnkit.api import Seq2SeqModel

    model = Seq2SeqModel.load(args.model, args.device)
    scores = model.explain_report(
        args.texts or None,
        split=args.split,
        count=args.count,
        method=args.method,
        reference=args.reference,
        out=args.out,
        image_format=args.format,
        pictures=args.pictures,
        picture=args.output,
    )
    return json.dumps(scores, indent=1) if args.json else table(scores)


def _graph(args) -> str:
    """Each --node's attention beside its saliency, as JSON; -o draws the first one's."""
    from attnkit.api import GraphModel

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


def _text(args) -> str:
    from attnkit.api import TextModel

    if args.reference or args.format is not None or args.pictures is not None:
        raise AttnkitError("--reference/--format/--pictures are for seq2seq checkpoints")
    model = TextModel.load(args.model, args.device)
    scores = model.explain_report(
        args.texts or None,
        split=args.split,
        count=args.count,
        method=args.method,
        out=args.out,
        picture=args.output,
    )
    return json.dumps(scores, indent=1)


def _memnet(args) -> str:
    from attnkit.api import MemoryModel

    if args.texts or args.reference or args.output is not None:
        raise AttnkitError(
            "memory networks explain the questions of --split (TEXT, --reference and -o are "
            "for seq2seq models; one story of yours: MemoryModel.explain in Python)"
        )
    model = MemoryModel.load(args.model, args.device)
    scores = model.explain_split(args.split or "test", args.count, args.method, args.out)
    return json.dumps(scores, indent=1)


#: a checkpoint's family -> what explain does with it (the parsed arguments -> what it prints)
EXPLAINERS = {"seq2seq": _seq2seq, "text": _text, "graph": _graph, "memnet": _memnet}
