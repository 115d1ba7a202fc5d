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


def refuse_decoding_options(args, answers: str, hint: str = "") -> None:
    """A model that answers each input in one pass (``answers``: "a graph model answers each
    node"): no beam search, no length penalty; ``hint`` is added to the ``--beam`` error.

    ``--beam`` left at the command's default (5) or 1 passes; anything else is refused rather
    than ignored, so that a user never believes a beam ran."""
    beam, alpha = getattr(args, "beam", None), getattr(args, "alpha", None)
    if beam not in (None, 1, 5):
        raise AttnkitError(
            f"--beam {beam}: {answers} in one pass, without beam search; leave --beam out{hint}"
        )
    if alpha is not None:
        raise AttnkitError(f"--alpha {alpha}: a length penalty is for seq2seq decoding")


def faithfulness_options(args) -> dict:
    """The options of ``attnkit faithfulness`` that every family's model takes, checked."""
    for name in ("permutations", "adversarial_steps", "ig_steps"):
        if getattr(args, name) < (1 if name == "ig_steps" else 0):
            flag = "--" + name.replace("_", "-")
            raise AttnkitError(f"{flag} must be at least {1 if name == 'ig_steps' else 0}")
    return {
        "count": args.count,
        "out": args.out,
        "permutations": args.permutations,
        "adversarial_steps": args.adversarial_steps,
        "ig_steps": args.ig_steps,
        "seed": args.seed,
    }
