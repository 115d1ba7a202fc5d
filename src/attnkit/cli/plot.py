"""``attnkit plot``: one input's map drawn to a file, through the Python API (a seq2seq
model's :class:`~attnkit.translator.Translation`, a vision model's :meth:`VisionModel.draw`)."""

from __future__ import annotations

from pathlib import Path

from attnkit.cli.options import (
    add_command,
    check_decode_args,
    decode_options,
    map_options,
    model_option,
)
from attnkit.errors import AttnkitError, writing


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
    from attnkit.api.loading import checkpoint_family

    with writing(args.output, "-o "):  # a full disk, a read-only or missing directory: one line
        PLOTTERS[checkpoint_family(args.model)](args)


def _seq2seq(args) -> None:
    from attnkit.api import Seq2SeqModel
    from attnkit.viz import save_heatmap

    output = Path(args.output)  # the command line gives a string (vision reads "dir/")
    if args.explain:
        raise AttnkitError(
            "--explain is for vision models; a seq2seq model's saliency: attnkit explain "
            f"--model {args.model} TEXT"
        )
    check_decode_args(args)
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


def _vision(args) -> None:
    from attnkit.api import VisionModel

    if args.layer is not None or args.head is not None or args.grid or args.map != "attention":
        raise AttnkitError(
            "--layer/--head/--grid/--map: a vision model has no layers of attention heads"
        )
    if args.image is None:
        raise AttnkitError(
            "vision models need --image N (the index of a test image) or --image FILE (a PNG or "
            "JPEG)"
        )
    model = VisionModel.load(args.model, "cpu")
    for path in model.draw(args.image, args.output, explain=args.explain):
        print(path)


def _pointer(args) -> None:
    """TEXT is the points: ``"0.1,0.2 0.9,0.1 0.5,0.9"`` (x,y pairs; sort: numbers)."""
    from attnkit.api import PointerModel

    if args.image is not None or args.explain or args.grid:
        raise AttnkitError("--image/--explain/--grid are for vision and seq2seq models")
    if not args.text:
        raise AttnkitError('give the points as TEXT, e.g. "0.1,0.2 0.9,0.1 0.5,0.9"')
    output = Path(args.output)
    if output.suffix.lower() not in (".png", ".svg", ".pdf"):
        raise AttnkitError(f"-o {output}: use a .png, .svg or .pdf file name")
    model = PointerModel.load(args.model, args.device)
    solution = model.solve(parse_points(args.text), beam=args.beam or 1)
    solution.plot(str(output)).clear()
    print(f"order: {' '.join(map(str, solution.order))}\npicture: {output}")


def parse_points(text: str) -> list[list[float]]:
    """``"0.1,0.2 0.9,0.1"`` -> [[0.1, 0.2], [0.9, 0.1]]; a bad number is one AttnkitError."""
    points = []
    for i, item in enumerate(text.replace(";", " ").split()):
        try:
            points.append([float(x) for x in item.split(",")])
        except ValueError:
            raise AttnkitError(f"point {i + 1} ({item!r}): expected numbers x,y") from None
    if len({len(p) for p in points}) > 1:
        raise AttnkitError("points: give every point the same number of coordinates")
    return points


def _graph(args) -> None:
    from attnkit.api import GraphModel

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


def _text(args) -> None:
    from attnkit.api import TextModel

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


def _memnet(args) -> None:
    from attnkit.api import MemoryModel

    if args.story is None or not args.text:
        raise AttnkitError("memory networks need --story FILE|TEXT and the question: TEXT")
    if args.layer is not None or args.head is not None or args.grid or args.explain:
        raise AttnkitError("--layer/--head/--grid/--explain: not for memory networks")
    if Path(args.output).suffix.lower() not in (".png", ".svg", ".pdf"):
        raise AttnkitError(f"-o {args.output}: use a .png, .svg or .pdf file name")
    story = Path(args.story)
    text = story.read_text(encoding="utf-8") if story.is_file() else args.story
    a = MemoryModel.load(args.model, "cpu").answer(text, args.text)
    a.plot(args.output)
    unknown = f" (words it never saw: {', '.join(a.unknown)})" if a.unknown else ""
    print(f"{a.question} -> {a.answer}{unknown}\nhops: {args.output}")


#: a checkpoint's family -> how ``plot`` draws it
PLOTTERS = {
    "seq2seq": _seq2seq,
    "vision": _vision,
    "pointer": _pointer,
    "graph": _graph,
    "text": _text,
    "memnet": _memnet,
}
