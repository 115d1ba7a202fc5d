"""The Hugging Face family's command-line hooks: ``attnkit plot --model hf:DIR TEXT -o out.png``
runs the model's own task on TEXT (or ``--image FILE`` for an image model) and draws its main
attention (the cross-attention of a translation, the self-attention otherwise): the mean of every
layer and head, one layer or head (``--layer``/``--head``, from 1), all of them (``--grid``), or
the mean beside its rollout (``--map rollout``). ``attnkit explain --model hf:DIR --heads
[TEXT] -o heads.png`` summarizes every layer and head (:mod:`attnkit.families.hf.heads`).
``evaluate`` refuses in one line; a command with no function here does not apply to the
family."""

from __future__ import annotations

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


def evaluate(args):
    model = args.model[0] if isinstance(args.model, list) else args.model
    raise AttnkitError(
        f"--model {model}: a pretrained model has no attnkit test split to evaluate; "
        f"attnkit plot --model {model} TEXT -o map.png draws its attention"
    )


def explain(args) -> str:
    if not args.heads:
        raise AttnkitError(
            f"--model {args.model}: a pretrained model's explain summarizes its heads: add --heads"
        )
    from attnkit.families.hf.heads import command

    return command(args)
