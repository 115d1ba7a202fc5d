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
from attnkit.errors import AttnkitError


def add_parser(sub) -> None:
    p = add_command(
        sub,
        "explain",
        run,
        help="attention beside gradient saliency (implicit attention)",
        description="For each input, force the model along its own output (or the reference, "
        "--reference) and draw the attention it pays beside the gradient saliency of every output "
        "token over the source (captum: gradient = the sequential Jacobian's norm, "
        "input x gradient, integrated gradients), on shared axes. Writes NNN.png, "
        "attention.json, saliency.json and scores.json (agreement of the two maps and, on the "
        "numbers and dates tasks, both scored against gold alignments) and report.html to --out; "
        "-o FILE draws one input's pair of maps to FILE alone. A model without "
        "attention (model.attention: none) gets its saliency alone. A memory network (bAbI) "
        "explains the first --count questions of --split (default test): each hop's attention "
        "beside the saliency of the answer over the story's sentences.",
    )
    model_option(p, "seq2seq checkpoint directory")
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
    device_option(p)
    threads_option(p)


def run(args) -> None:
    from attnkit.api.loading import checkpoint_family

    family = checkpoint_family(args.model)
    if family not in EXPLAINERS:
        raise AttnkitError(f"--model {args.model}: explain is for seq2seq and memnet checkpoints")
    EXPLAINERS[family](args)


def _seq2seq(args) -> None:
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
    print(json.dumps(scores, indent=1))


def _memnet(args) -> None:
    from attnkit.api import MemoryModel

    if args.texts or args.reference or args.output is not None:
        raise AttnkitError(
            "memory networks explain the questions of --split (TEXT, --reference and -o are "
            "for seq2seq models; one story of yours: MemoryModel.explain in Python)"
        )
    model = MemoryModel.load(args.model, args.device)
    scores = model.explain_split(args.split or "test", args.count, args.method, args.out)
    print(json.dumps(scores, indent=1))


#: a checkpoint's family -> how ``explain`` explains it
EXPLAINERS = {"seq2seq": _seq2seq, "memnet": _memnet}
