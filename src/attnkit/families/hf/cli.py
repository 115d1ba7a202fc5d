"""The Hugging Face family's command-line hooks: ``attnkit plot --model hf:DIR TEXT -o out.png``
runs the model's own task on TEXT (or ``--image FILE`` for an image model, drawn with the [CLS] row
of the map over its patches beside the map: :mod:`attnkit.families.hf.pictures`) and draws its main
attention (the cross-attention of a translation, the self-attention otherwise): the mean of every
layer and head, one layer or head (``--layer``/``--head``, from 1), all of them (``--grid``), or the
mean beside its rollout (``--map rollout``). ``attnkit translate --model hf:DIR TEXT`` translates
with an encoder-decoder (Marian, T5, BART): one output a line, ``--beam`` its ``generate``'s beams,
``--attention-out`` every output's cross-attention (every layer and head, with its rollout) as JSON
or NPZ. ``explain`` draws attention beside gradient saliency, and with ``--heads`` summarizes every
layer and head (:mod:`attnkit.families.hf.heads`); ``evaluate --gold PATH`` scores a translator's
cross-attention against human word alignments (AER); ``faithfulness`` questions a text classifier's
attention; a command with no function here does not apply to the family."""

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
    if result.picture is not None and result.patches is not None and not args.grid:
        from attnkit.families.hf.pictures import plot_patches  # the picture beside the map

        rollout = args.map == "rollout"
        if rollout and (args.layer is not None or args.head is not None):
            raise AttnkitError("--map rollout draws every layer: leave out --layer/--head")
        if args.map == "flow":
            raise AttnkitError(
                "--map flow: a pretrained model's plot draws rollout (--map rollout)"
            )
        plot_patches(result, output, args.layer, args.head, rollout).clear()
    else:
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


def explain(args) -> str:
    """``attnkit explain --model hf:DIR TEXT...``: attention beside gradient saliency
    (:func:`attnkit.families.hf.gradients.explain_report`); with ``--heads``, every layer's and
    head's summary (:func:`attnkit.families.hf.heads.command`)."""
    import json

    if args.heads:
        from attnkit.families.hf.heads import command

        return command(args)

    from attnkit.families.hf.gradients import explain_report
    from attnkit.families.hf.model import PretrainedModel

    if args.split is not None or args.reference or args.node:
        raise AttnkitError("--split/--reference/--node: a pretrained model explains typed TEXTs")
    if args.format is not None or args.pictures is not None:
        raise AttnkitError("--format/--pictures are for seq2seq checkpoints; -o FILE draws one")
    model = PretrainedModel.load(args.model, args.device)
    scores = explain_report(model, args.texts, args.method, args.out, args.output)
    return json.dumps(scores, indent=1)


def faithfulness(args):
    """``attnkit faithfulness --model hf:DIR TEXT... | --data FILE``: a text classifier's
    attention questioned (:meth:`PretrainedModel.faithfulness`)."""
    from attnkit.families.commands import faithfulness_options
    from attnkit.families.hf.model import PretrainedModel

    if args.split is not None:
        raise AttnkitError("--split: a pretrained model has no split; give TEXT or --data FILE")
    if args.inputs and args.data is not None:
        raise AttnkitError("give TEXT or --data FILE, not both")
    model = PretrainedModel.load(args.model, args.device)
    options = faithfulness_options(args)
    return model.faithfulness(args.inputs or None, data=args.data, **options)


def evaluate(args):
    """``attnkit evaluate --model hf:DIR --gold PATH [--out DIR]``: a translator's
    cross-attention against human word alignments (:meth:`PretrainedModel.alignment_error`),
    its scores.json written to ``--out``."""
    from attnkit.families.hf.model import PretrainedModel

    model = args.model[0] if isinstance(args.model, list) else args.model
    if args.gold is None:
        raise AttnkitError(
            f"--model {model}: a pretrained model has no attnkit test split to evaluate; "
            f"--gold PATH scores a translator's cross-attention against human word alignments"
        )
    scores = PretrainedModel.load(model, args.device).alignment_error(args.gold)
    if args.out is not None:  # scores.json, as every evaluation writes
        import json

        args.out.mkdir(parents=True, exist_ok=True)
        (args.out / "scores.json").write_text(json.dumps(scores.to_dict(), indent=1), "utf-8")
    return scores
