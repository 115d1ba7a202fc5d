"""The seq2seq family's command-line hooks: what ``attnkit plot``, ``evaluate`` and ``explain``
do with its checkpoints (the parsed arguments in). A command with no function here does not
apply to the family."""

from __future__ import annotations

import json
from pathlib import Path

from attnkit.errors import AttnkitError
from attnkit.families.commands import faithfulness_options
from attnkit.families.seq2seq.model import Seq2SeqModel

_ALONG = {"own output": "the model's own output", "reference": "the reference"}
#: the alignment measures the table shows, with the words it shows them by
MEASURES = {
    "aer": "alignment error rate vs gold (lower is better)",
    "argmax_in_span": "% of steps whose top source token is a gold one",
    "entropy_normalised": "entropy, normalised (0 sharp .. 1 flat)",
}


def plot(args) -> None:
    from attnkit.viz import save_heatmap

    output = Path(args.output)  # the command line gives a string (vision reads "dir/")
    if args.explain:
        raise AttnkitError(
            "--explain is for vision models; a seq2seq model's saliency: attnkit explain "
            f"--model {args.model} TEXT"
        )
    if not args.text or not args.text.strip():
        raise AttnkitError("give the TEXT to translate and draw (it is blank: nothing to draw)")
    if output.suffix.lower() not in (".png", ".svg", ".pdf"):
        raise AttnkitError(f"-o {output}: use a .png, .svg or .pdf file name")
    model = Seq2SeqModel.load(args.model, args.device)
    if args.map != "attention":
        _draw_rollout(model, args, output)
        return
    (t,) = model.translate(args.text, beam=args.beam, alpha=args.alpha, heads=True)
    if model.has_attention:
        _draw_attention(t.record(), args, output)
        print(f"{t.source} -> {t.output}\nheatmap: {output}")
        return
    if args.layer is not None or args.head is not None or args.grid:
        raise AttnkitError("--layer/--head/--grid: the model has no attention to draw")
    from attnkit.explain.no_attention import TITLE, pictured

    if not t.source_tokens:
        raise AttnkitError("the input is blank: nothing was decoded, nothing to draw")
    (shown,) = pictured(model.translator, [t])
    save_heatmap(shown.record(), output, title=TITLE, value_label="saliency")
    print(f"{t.source} -> {t.output}\nsaliency (the model has no attention): {output}")


def _draw_rollout(model, args, output: Path) -> None:
    """The raw attention (the mean of the layers and heads) beside its rollout or flow, of the
    greedy output."""
    import dataclasses

    from attnkit.viz import plot_side_by_side

    if args.layer is not None or args.head is not None or args.grid or args.beam != 1:
        raise AttnkitError(f"--map {args.map} draws the greedy output's mean attention beside its "
                           f"{args.map}: leave out --layer/--head/--grid/--beam")  # fmt: skip
    maps = model.rollout(args.text)
    (t,) = model.translate(args.text, heads=False)
    record = t.record()
    if record.weights.shape != maps["attention"].shape:
        raise AttnkitError("the forced output does not match the greedy one")
    raw = dataclasses.replace(record, weights=maps["attention"])
    other = dataclasses.replace(record, weights=maps[args.map])
    plot_side_by_side(raw, other, output, titles=("attention (mean)", args.map)).clear()
    print(f"{t.source} -> {t.output}\nattention and {args.map}: {output}")


def _draw_attention(record, args, output: Path) -> None:
    """The map ``plot`` draws: the mean, one layer or head (--layer/--head), or all (--grid)."""
    from attnkit.viz import save_heatmap
    from attnkit.viz.heads import choose_map, map_title, plot_head_grid

    if args.grid:
        if args.layer is not None or args.head is not None:
            raise AttnkitError("--grid draws every layer and head: leave out --layer/--head")
        plot_head_grid(record, output).clear()
        return
    chosen = choose_map(record, args.layer, args.head)
    title = map_title(args.layer, args.head) if record.heads is not None else None
    save_heatmap(chosen, output, title=title)


def evaluate(args):
    from attnkit.evaluation.inputs import EvalFiles

    EvalFiles(args.src, args.ref, args.tsv)  # --src without --ref and the like: before loading
    model = Seq2SeqModel.load(args.model, args.device)
    return model.evaluate(
        args.split,
        src=args.src,
        ref=args.ref,
        tsv=args.tsv,
        beam=args.beam,
        alpha=args.alpha,
        out=args.out,
        examples=args.examples,
        data_dir=args.data_dir,
    )


def explain(args) -> str:
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
        data_dir=args.data_dir,
    )
    return json.dumps(scores, indent=1) if args.json else table(scores)


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


def faithfulness(args):
    """``attnkit faithfulness``: the tests on typed inputs, or the first items of ``--split``."""
    model = Seq2SeqModel.load(args.model, args.device)
    return model.faithfulness(
        args.inputs or None,
        split=args.split,
        data_dir=args.data_dir,
        **faithfulness_options(args),
    )
