"""The options several commands share, each defined once: ``--model``, ``--device``,
``--threads``, the decoding options, the Transformer map choice and the saliency method."""

from __future__ import annotations

import argparse
import math

from attnkit import zoo
from attnkit.errors import AttnkitError


def formatter(prog):
    return argparse.RawDescriptionHelpFormatter(prog, max_help_position=32)


def add_command(sub, name: str, run, **kwargs) -> argparse.ArgumentParser:
    """A subcommand's parser, whose parsed arguments name ``run`` (what executes it)."""
    p = sub.add_parser(name, formatter_class=formatter, **kwargs)
    p.set_defaults(run=run)
    return p


def model_option(p: argparse.ArgumentParser, help_text: str, many: bool = False) -> None:
    """``--model DIR``: one checkpoint directory (or ``zoo:NAME``), or (``many``) repeatable for
    an ensemble."""
    help_text += " (or zoo:NAME, a model of `attnkit zoo`)"
    if many:
        p.add_argument(
            "--model",
            type=zoo.checkpoint_argument,
            action="append",
            required=True,
            metavar="DIR",
            help=help_text,
        )
    else:
        p.add_argument(
            "--model", type=zoo.checkpoint_argument, required=True, metavar="DIR", help=help_text
        )


def device_option(p: argparse.ArgumentParser) -> None:
    p.add_argument("--device", default="auto", help="auto, cpu or cuda")


def threads_option(p: argparse.ArgumentParser) -> argparse.ArgumentParser:
    p.add_argument(
        "--threads",
        type=int,
        default=None,
        metavar="N",
        help="CPU threads for torch (default: OMP_NUM_THREADS if set, else 1: a second thread "
        "gains little on decoding's small per-step matmuls and costs a lot on a busy machine; "
        "docs/USAGE.md, Commands)",
    )
    return p


def decode_options(p: argparse.ArgumentParser, beam_default: int = 1, beam_help: str = "") -> None:
    """``--beam``, ``--alpha``, ``--device`` and ``--threads``."""
    p.add_argument(
        "--beam", type=int, default=beam_default, help=beam_help or "beam size (default 1: greedy)"
    )
    p.add_argument(
        "--alpha", type=float, default=None, help="length penalty exponent (default: the config's)"
    )
    device_option(p)
    threads_option(p)


def map_options(p: argparse.ArgumentParser) -> None:
    """``--layer``, ``--head`` and ``--grid``: which of a Transformer's maps to draw."""
    p.add_argument(
        "--layer",
        type=int,
        default=None,
        metavar="L",
        help="Transformer: draw decoder layer L's cross-attention (1 = the lowest; with no --head: "
        "the mean of its heads)",
    )
    p.add_argument(
        "--head",
        type=int,
        default=None,
        metavar="H",
        help="Transformer: draw head H (1-based; with no --layer: averaged over the layers)",
    )
    p.add_argument(
        "--grid",
        action="store_true",
        help="Transformer: every layer (rows) and head (columns) in one picture",
    )


def saliency_method(name: str) -> str:
    """``--method``: a saliency method, hyphens or underscores (input-x-gradient)."""
    from attnkit.explain.saliency import METHODS  # only when explain runs (captum)

    method = name.replace("-", "_")
    if method not in METHODS:
        raise argparse.ArgumentTypeError(
            f"unknown saliency method {name!r}; valid: {', '.join(METHODS)}"
        )
    return method


def check_decode_args(args: argparse.Namespace) -> None:
    """``--beam``, ``--alpha`` and ``--n-best`` of a decoding command, or one-line errors."""
    if args.beam < 1:
        raise AttnkitError(f"--beam must be at least 1, got {args.beam}")
    if args.alpha is not None and not (math.isfinite(args.alpha) and args.alpha >= 0):
        raise AttnkitError(f"--alpha must be a finite number >= 0, got {args.alpha}")
    n_best = getattr(args, "n_best", 1)
    if not 1 <= n_best <= max(args.beam, 1):
        raise AttnkitError(f"--n-best must be between 1 and --beam ({args.beam}), got {n_best}")
