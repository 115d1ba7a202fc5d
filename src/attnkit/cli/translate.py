"""``attnkit translate``: :meth:`attnkit.Seq2SeqModel.translate` from the command line."""

from __future__ import annotations

import sys
from pathlib import Path

from attnkit.cli.options import add_command, decode_options, model_option
from attnkit.errors import AttnkitError, writing


def add_parser(sub) -> None:
    p = add_command(
        sub,
        "translate",
        run,
        help="translate text with a trained model",
        description="Translate each TEXT argument, each line of a file (--input FILE), or each "
        "line of standard input with '-' (or no TEXT). Prints one output per line (a blank line "
        "gives a blank line); --attention-out saves every output's attention matrix as JSON or "
        "NPZ.",
    )
    model_option(
        p,
        "checkpoint directory (e.g. runs/demo/model/best); repeat --model to decode several "
        "seq2seq checkpoints of one task as an ensemble (the mean of their output probabilities at "
        "every step); hf:DIR: a pretrained encoder-decoder (Marian, T5, BART)",
        many=True,
    )
    p.add_argument(
        "texts", nargs="*", metavar="TEXT", help="inputs; '-' or none reads standard input"
    )
    p.add_argument(
        "-i",
        "--input",
        type=Path,
        default=None,
        metavar="FILE",
        help="translate each line of FILE (UTF-8; other bytes become U+FFFD, with a warning)",
    )
    decode_options(p)
    p.add_argument(
        "--n-best",
        type=int,
        default=1,
        help="print the N best outputs of each input, tab-separated",
    )
    p.add_argument(
        "--attention-out",
        type=Path,
        default=None,
        help="write the attention to FILE (.json or .npz); refused for a model without attention "
        "(model.attention: none: see attnkit explain)",
    )
    p.add_argument(
        "--scores", action="store_true", help="print the log-probability after each output"
    )


def _inputs(texts: list[str], path: Path | None) -> list[str]:
    """The TEXT arguments, the lines of ``path`` (--input), or the lines of standard input ('-'
    or none given)."""
    from attnkit.data.bounded import iter_raw_lines
    from attnkit.data.text_input import read_inputs

    if path is not None:
        if texts:
            raise AttnkitError("give TEXT arguments or --input FILE, not both")
        try:
            with open(path, "rb") as lines:
                return read_inputs(iter_raw_lines(lines, path))  # bounded (data.bounded)
        except FileNotFoundError:
            raise AttnkitError(f"--input {path}: no such file") from None
        except OSError as exc:
            raise AttnkitError(f"--input {path}: cannot read ({exc.strerror or exc})") from None
    if texts and texts != ["-"]:
        files = [t for t in texts if _is_file(t)]
        if files:  # most likely meant as --input: said, not guessed (a word may name a file)
            print(
                f"note: {files[0]!r} is a file, translated here as a text; "
                f"'--input {files[0]}' translates its lines",
                file=sys.stderr,
            )
        return texts
    if sys.stdin is None or sys.stdin.isatty() and not texts:
        raise AttnkitError("no input: give TEXT arguments or pipe lines into 'attnkit translate -'")
    stream = getattr(sys.stdin, "buffer", None)
    if stream is None:  # a text stream (tests, embedding): its lines as they are
        return read_inputs(sys.stdin)
    # bytes, decoded and not trusted; each line's length bounded before it is decoded
    return read_inputs(iter_raw_lines(stream, "<stdin>"))


def _is_file(text: str) -> bool:
    try:
        return len(text) < 4096 and Path(text).is_file()
    except (OSError, ValueError):  # a name too long or with a NUL byte: a text
        return False


def run(args) -> None:
    from attnkit.api import Seq2SeqModel
    from attnkit.cli.options import run_hook
    from attnkit.families import scheme_family
    from attnkit.viz import save_records

    texts = _inputs(args.texts, args.input)
    if scheme_family(args.model[0]) is not None:  # a model its family loads itself (hf:DIR)
        args.inputs = texts  # what the family's translate hook reads
        run_hook("translate", args, args.model[0])
        return
    out = args.attention_out
    if out is not None and out.suffix not in (".json", ".npz"):
        raise AttnkitError(f"--attention-out {out}: use a .json or .npz file name")
    model = Seq2SeqModel.load(args.model, args.device)
    if out is not None and not model.has_attention:
        raise AttnkitError(
            f"--attention-out {out}: the model has no attention (model.attention: "
            "none); 'attnkit explain' draws and writes its gradient saliency instead"
        )
    # a Transformer's records hold every head
    results = model.translate(
        texts, beam=args.beam, n_best=args.n_best, alpha=args.alpha, heads=out is not None
    )
    for t in results:
        outputs = [(o.output + (f"\t{o.score:.4f}" if args.scores else "")) for o in t.nbest]
        print("\t".join(outputs))
    if out is not None:
        with writing(out, "--attention-out "):
            save_records([t.record() for t in results], out)
        print(f"attention of {len(results)} outputs written to {out}", file=sys.stderr)
