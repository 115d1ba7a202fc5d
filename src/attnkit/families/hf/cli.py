"""The Hugging Face family's command-line hooks: ``attnkit plot --model hf:DIR TEXT -o out.png``
runs the model's own task on TEXT (or ``--image FILE`` for an image model) and draws its main
attention (the cross-attention of a translation, the self-attention otherwise): the mean of every
layer and head, one layer or head (``--layer``/``--head``, from 1), all of them (``--grid``), or
the mean beside its rollout (``--map rollout``). ``attnkit translate --model hf:DIR TEXT``
translates with an encoder-decoder (Marian, T5, BART): one output a line, ``--beam`` its
``generate``'s beams, ``--attention-out`` every output's cross-attention (every layer and head,
with its rollout) as JSON or NPZ. ``evaluate`` refuses in one line; a command with no function
here does not apply to the family."""

from __future__ import annotations

import sys
from pathlib import Path

from attnkit.errors import AttnkitError
from attnkit.families.commands import refuse_decoding_options


def plot(args) -> None:
    from attnkit.families.hf.model import PretrainedModel

    output = Path(args.output)
    refuse_decoding_options(args, "attnkit plot draws a pretrained model's greedy answer")
    if args.explain or args.node is not None or args.story is not None:
        raise AttnkitError("--explain/--node/--story: not for a pretrained model's plot")
    if args.entropy or args.lookup:
        raise AttnkitError("--entropy/--lookup are for graph models")
    if output.suffix.lower() not in (".png", ".svg", ".pdf"):
        raise AttnkitError(f"-o {output}: use a .png, .svg or .pdf file name")
    model = PretrainedModel.load(args.model, args.device)
    if model.takes_images:
        if args.image is None or args.text:
            raise AttnkitError(f"{model.name} reads images: give --image FILE, and no TEXT")
        one = args.image
    else:
        if args.image is not None:
            raise AttnkitError(f"--image: {model.name} reads text; give the TEXT")
        if not args.text or not args.text.strip():
            raise AttnkitError("give the TEXT to run and draw (it is blank: nothing to draw)")
        one = args.text
    result = model.run(one)
    _draw(result, args, output)
    print(f"{result.source} -> {result.output}\n{result.title()}: {output}")


def _draw(result, args, output: Path) -> None:
    import dataclasses

    from attnkit.viz import plot_side_by_side
    from attnkit.viz.heads import plot_head_grid

    if args.map == "flow":
        raise AttnkitError("--map flow: a pretrained model's plot draws rollout (--map rollout)")
    if args.grid or args.map == "rollout":
        if args.layer is not None or args.head is not None:
            raise AttnkitError(
                "--grid and --map rollout draw every layer: leave out --layer/--head"
            )
        record = result.record()
        if args.grid:
            plot_head_grid(record, output).clear()
            return
        rolled = dataclasses.replace(record, weights=record.rollout, heads=None, rollout=None)
        titles = ("attention (mean)", "rollout")
        plot_side_by_side(record, rolled, output, titles=titles).clear()
        return
    result.plot(output, layer=args.layer, head=args.head).clear()


def translate(args) -> None:
    """``attnkit translate``: ``args.inputs``, the texts the command read (its TEXT arguments,
    ``--input`` FILE or standard input)."""
    from attnkit.errors import writing
    from attnkit.families.hf.model import PretrainedModel
    from attnkit.viz import save_records

    if args.n_best != 1 or args.scores:
        raise AttnkitError(
            "--n-best/--scores: a pretrained model's translate gives its one best output"
        )
    if args.alpha is not None:
        raise AttnkitError(
            f"--alpha {args.alpha}: a pretrained model's length penalty is its generation "
            "config's (length_penalty)"
        )
    out = args.attention_out
    if out is not None and out.suffix not in (".json", ".npz"):
        raise AttnkitError(f"--attention-out {out}: use a .json or .npz file name")
    model = PretrainedModel.load(args.model[0], args.device)
    if model.kind.task != "translate":
        raise AttnkitError(
            f"--model {model.name}: attnkit translate is for encoder-decoders (Marian, T5, BART); "
            f"this is {model.kind.words}: attnkit plot --model {model.name} TEXT -o map.png "
            "draws its attention"
        )
    results = model.translate([text for text in args.inputs if text.strip()], beam=args.beam)
    answers = iter(results)
    for text in args.inputs:  # a blank line gives a blank line, as a checkpoint's translate
        print(next(answers).output if text.strip() else "")
    if out is not None:
        with writing(out, "--attention-out "):
            save_records([r.record() for r in results], out)
        print(f"attention of {len(results)} outputs written to {out}", file=sys.stderr)


def evaluate(args):
    model = args.model[0] if isinstance(args.model, list) else args.model
    raise AttnkitError(
        f"--model {model}: a pretrained model has no attnkit test split to evaluate; "
        f"attnkit plot --model {model} TEXT -o map.png draws its attention"
    )
