"""``attnkit plot``: one input's map drawn to a file by the ``plot`` hook of the checkpoint's
family (``attnkit.families.<name>.cli``), through its model object."""

from __future__ import annotations

from attnkit.cli.options import (
    add_command,
    decode_options,
    map_options,
    model_option,
    run_hook,
)
from attnkit.errors import writing


def add_parser(sub) -> None:
    p = add_command(
        sub,
        "plot",
        run,
        help="draw the attention of one input",
        description="Translate TEXT and draw its attention heatmap (source on x, output on y) "
        "to -o (.png, .svg or .pdf); for a model without attention (model.attention: none), its "
        "gradient saliency, titled so. For vision models, --image N draws test image N and "
        "--image FILE a PNG or JPEG of your own (made grey, white on black and the model's size, "
        "as its training images): -o FILE.png or .svg draws every step side by side, -o FILE.gif "
        "animates them, and -o DIR/ (a directory: ending in / or existing) gets both a .png and "
        "a .gif; --explain draws, beside the attention (RAM: the glimpse path), the gradient "
        "saliency and Grad-CAM of the same answer, one row per output step. For text "
        "classifiers, TEXT is a sentence: its words shaded by attention (--explain: beside "
        "their gradient saliency). A Transformer's map "
        "is the mean of all its layers and heads unless --layer and/or --head pick one; --grid "
        "draws every layer and head; --map rollout or --map flow draws, beside that mean, the "
        "attention rollout or flow through the encoder (Abnar & Zuidema 2020). For memory "
        "networks (bAbI), TEXT is a question about --story: the picture is each hop's attention "
        "over the story's sentences.",
    )
    model_option(p, "checkpoint directory")
    p.add_argument("text", nargs="?", help="the input to translate and draw")
    map_options(p)
    p.add_argument(
        "--map",
        choices=("attention", "rollout", "flow"),
        default="attention",
        help="Transformer: draw attention rollout or flow (each output step over the source "
        "tokens, through every encoder layer with its residual) beside the raw attention",
    )
    p.add_argument(
        "--image",
        default=None,
        metavar="N|FILE",
        help="vision models: the index of a test image, or a PNG/JPEG file",
    )
    p.add_argument(
        "--node",
        default=None,
        metavar="N",
        help="graph models: draw node N's two-hop neighbourhood (its index, or its name in the "
        "data), edges shaded and widened by attention, one panel per head",
    )
    p.add_argument(
        "--entropy",
        action="store_true",
        help="graph models: a histogram of every node's attention entropy per head against "
        "uniform attention over its degree",
    )
    p.add_argument(
        "--lookup",
        action="store_true",
        help="graph models trained on DictionaryLookup: the query x key attention of a test graph",
    )
    p.add_argument(
        "--story",
        default=None,
        metavar="FILE|TEXT",
        help="memory networks: the story (a file or text: one sentence a line, bAbI's line "
        "numbers may stay) that TEXT, the question, asks about",
    )
    p.add_argument(
        "--explain",
        action="store_true",
        help="vision models: the attention beside its implicit attention, the input-gradient "
        "saliency and Grad-CAM of each answer (-o .png, .svg or DIR/); text classifiers: the "
        "attention beside the gradient saliency (seq2seq models: attnkit explain)",
    )
    p.add_argument(
        "-o",
        "--output",
        required=True,
        help="output file (.png, .svg or .pdf; vision: .png, .svg, .gif, or a directory DIR/)",
    )
    decode_options(p)


def run(args) -> None:
    with writing(args.output, "-o "):  # a full disk, a read-only or missing directory: one line
        run_hook("plot", args, args.model)
