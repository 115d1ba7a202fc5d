"""``attnkit demo``: train a number translator and draw its attention (no download)."""

from __future__ import annotations

from pathlib import Path

from attnkit.cli.options import add_command
from attnkit.errors import writing


def add_parser(sub) -> None:
    p = add_command(
        sub,
        "demo",
        run,
        help="train a number translator and draw its attention",
        description="Generate the number-translation task (number words in en/de/fr/es -> digits, "
        "no download), train a Bahdanau-attention model to its data budget (at most 60 epochs, "
        "stopping early once the dev score stops improving: about a minute on an idle 2-core "
        "CPU, longer on a slower or busier one, to the same accuracy), print test exact-match "
        "and a few translations, and write heatmaps, the attention as JSON and an HTML report. "
        "A 15-minute wall clock is only a safety cap: if it ends training, one line says so, "
        "with the dev score reached and how to go on (--resume).",
    )
    p.add_argument(
        "--out",
        type=Path,
        default=None,
        help="output directory (default: runs/demo, and runs/demo-ATTENTION for another "
        "--attention, so that a second demo never replaces the first)",
    )
    p.add_argument(
        "--quick",
        action="store_true",
        help="a small, fast version for smoke tests (under a minute)",
    )
    p.add_argument(
        "--attention",
        default="bahdanau",
        help="attention type (default: bahdanau); none trains the encoder-decoder without "
        "attention, whose pictures show gradient saliency",
    )
    p.add_argument(
        "--minutes",
        type=float,
        default=None,
        help="safety cap on training time in minutes (default: 15); with --resume, the minutes "
        "this call may add",
    )
    p.add_argument(
        "--resume",
        action="store_true",
        help="go on training the demo in the output directory from its last checkpoint (after "
        "the safety cap stopped it)",
    )
    p.add_argument(
        "--threads",
        dest="train_threads",  # not the decoding commands' --threads, which main() applies
        type=int,
        default=None,
        metavar="N",
        help="CPU threads for training (default: torch's, every core); 1 on a shared machine",
    )
    p.add_argument(
        "--no-progress",
        action="store_true",
        help="no progress bars (they are drawn only when stderr is a terminal anyway)",
    )


def run(args) -> None:
    from attnkit.demo import default_out, run_demo

    out = args.out if args.out is not None else default_out(args.attention)
    with writing(out, "--out "):
        _run(run_demo, out, args)


def _run(run_demo, out, args) -> None:
    run_demo(
        out,
        quick=args.quick,
        attention=args.attention,
        minutes=args.minutes,
        progress=not args.no_progress,
        threads=args.train_threads,
        resume=args.resume,
    )
