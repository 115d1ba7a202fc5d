"""The text family's command-line hooks: what ``attnkit plot``, ``evaluate`` and ``explain``
do with its checkpoints (the parsed arguments in). A command with no function here does not
apply to the family."""

from __future__ import annotations

import json
from pathlib import Path

from attnkit.errors import AttnkitError
from attnkit.families.commands import faithfulness_options, refuse_decoding_options
from attnkit.families.text.model import TextModel


def plot(args) -> None:
    if args.beam != 1 or args.alpha is not None:
        raise AttnkitError("--beam/--alpha: a text classifier answers in one pass, no decoding")
    if args.layer is not None or args.head is not None or args.grid:
        raise AttnkitError("--layer/--head/--grid: a text classifier has one layer of attention")
    if args.image is not None:
        raise AttnkitError("--image is for vision models; give the sentence as TEXT")
    if not args.text:
        raise AttnkitError("give the TEXT (a sentence) to classify and draw")
    output = Path(args.output)
    if output.suffix.lower() not in (".png", ".svg", ".pdf"):
        raise AttnkitError(f"-o {output}: use a .png, .svg or .pdf file name")
    model = TextModel.load(args.model, args.device)
    result = model.classify(args.text)
    model.draw(args.text, output, explain=args.explain)
    shown = "attention" if model.has_attention else "saliency (the model has no attention)"
    print(f"{args.text} -> {result.label}\n{shown}: {output}")


def evaluate(args):
    refuse_decoding_options(args, "a text classifier answers each sentence")
    model = TextModel.load(args.model[0], args.device)
    return model.evaluate(args.split, args.out, args.data_dir)


def explain(args) -> str:
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
        data_dir=args.data_dir,
    )
    return json.dumps(scores, indent=1)


def faithfulness(args):
    """``attnkit faithfulness``: the tests on typed inputs, or the first items of ``--split``."""
    model = TextModel.load(args.model, args.device)
    return model.faithfulness(
        args.inputs or None, split=args.split, data_dir=args.data_dir, **faithfulness_options(args)
    )
