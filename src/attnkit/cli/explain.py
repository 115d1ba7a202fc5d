"""``attnkit explain``: attention beside gradient saliency, for typed inputs or a split's first
items, by the ``explain`` hook of the checkpoint's family (seq2seq, text, graph, memnet:
``attnkit.families.<name>.cli``)."""

from __future__ import annotations

from pathlib import Path

from attnkit.cli.options import (
    add_command,
    data_dir_option,
    device_option,
    model_option,
    run_hook,
    saliency_method,
    threads_option,
)
from attnkit.errors import writing


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
        "the story's sentences. A pretrained model (hf:NAME) summarizes its heads (--heads).",
    )
    model_option(p, "seq2seq or text checkpoint directory, or hf:DIR (a pretrained model)")
    p.add_argument("texts", nargs="*", metavar="TEXT", help="inputs to explain")
    p.add_argument(
        "--split", choices=("dev", "test"), default=None, help="explain the first items of a split"
    )
    p.add_argument("--count", type=int, default=10, help="items of --split to explain (default 10)")
    data_dir_option(p)
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
    _heads_options(p)
    device_option(p)
    threads_option(p)


def _heads_options(p) -> None:
    """A pretrained model's head summaries (``attnkit.families.hf.heads``)."""
    p.add_argument(
        "--heads",
        action="store_true",
        default=None,
        help="pretrained models (hf:NAME): summarize every layer and head (entropy, sink share, "
        "previous-token and induction scores, mean distance) on a random block of tokens said "
        "twice, or on TEXT when given; prints a table and draws a grid per score to -o FILE or "
        "--out DIR (heads.png and heads.json)",
    )
    p.add_argument(
        "--sort",
        choices=("entropy", "sink", "previous", "induction", "distance"),
        default=None,
        help="--heads: sort the table by this score, highest first (default: induction, or "
        "entropy for TEXT)",
    )


def run(args) -> None:
    with writing(args.out or args.output or "the explain directory", ""):
        print(run_hook("explain", args, args.model))
