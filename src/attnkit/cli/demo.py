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
        "no download), train a Bahdanau-attention model for at most 2.25 minutes, "
        "print test exact-match and a few translations, and write heatmaps, the "
        "attention as JSON and an HTML report.",
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
        help="training time budget in minutes (default: 2.25)",
    )
    p.add_argument("--no-progress", action="store_true", help="no progress bars")


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
    )
