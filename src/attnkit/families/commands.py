"""Checks the families' command-line hooks share: decoding options given to a model that does not
decode, and the decoding options themselves."""

from __future__ import annotations

import argparse
import math

from attnkit.errors import AttnkitError


def check_decode_args(args: argparse.Namespace) -> None:
    """``--beam``, ``--alpha`` and ``--n-best`` of a decoding command, or one-line errors."""
    if args.beam < 1:
        raise AttnkitError(f"--beam must be at least 1, got {args.beam}")
    if args.alpha is not None and not (math.isfinite(args.alpha) and args.alpha >= 0):
        raise AttnkitError(f"--alpha must be a finite number >= 0, got {args.alpha}")
    n_best = getattr(args, "n_best", 1)
    if not 1 <= n_best <= max(args.beam, 1):
        raise AttnkitError(f"--n-best must be between 1 and --beam ({args.beam}), got {n_best}")


def refuse_decoding_options(args) -> None:
    """A model that answers each input in one pass: no beam search, no length penalty.

    ``--beam`` left at the command's default (5) or 1 passes; anything else is refused rather
    than ignored, so that a user never believes a beam ran."""
    beam, alpha = getattr(args, "beam", None), getattr(args, "alpha", None)
    if beam not in (None, 1, 5):
        raise AttnkitError(
            f"--beam {beam}: a vision model answers each image in one pass, without beam search; "
            "leave --beam out (RAM: --mc-samples sets the glimpse paths averaged per image)"
        )
    if alpha is not None:
        raise AttnkitError(f"--alpha {alpha}: a length penalty is for seq2seq decoding")
