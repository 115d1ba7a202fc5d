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
from attnkit.errors import AttnkitError


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
        "saliency and Grad-CAM of the same answer, one row per output step. A Transformer's map "
        "is the mean of all its layers and heads unless --layer and/or --head pick one; --grid "
        "draws every layer and head. For memory networks (bAbI), TEXT is a question about "
        "--story: the picture is each hop's attention over the story's sentences.",
    )
    model_option(p, "checkpoint directory")
    p.add_argument("text", nargs="?", help="the input to translate and draw")
    map_options(p)
    p.add_argument(
        "--image",
        default=None,
        metavar="N|FILE",
        help="vision models: the index of a test image, or a PNG/JPEG file",
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
        "saliency and Grad-CAM of each answer (-o .png, .svg or DIR/; seq2seq models: attnkit "
        "explain)",
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
    if not args.text:
        raise AttnkitError("give the TEXT to translate and draw")
    if output.suffix.lower() not in (".png", ".svg", ".pdf"):
        raise AttnkitError(f"-o {output}: use a .png, .svg or .pdf file name")
    model = Seq2SeqModel.load(args.model, args.device)
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

    if args.layer is not None or args.head is not None or args.grid:
        raise AttnkitError("--layer/--head/--grid: a vision model has no layers of attention heads")
    if args.image is None:
        raise AttnkitError(
            "vision models need --image N (the index of a test image) or --image FILE (a PNG or "
            "JPEG)"
        )
    model = VisionModel.load(args.model, "cpu")
    for path in model.draw(args.image, args.output, explain=args.explain):
        print(path)


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


#: a checkpoint's family -> how ``plot`` draws one input
PLOTTERS = {"seq2seq": _seq2seq, "vision": _vision, "memnet": _memnet}
