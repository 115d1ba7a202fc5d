"""Checks the families' command-line hooks share: decoding options given to a model that does not
decode, and the options of ``attnkit faithfulness``. The decoding options themselves are checked
by the API object that decodes (``Seq2SeqModel.search_options``), once."""

from __future__ import annotations

from attnkit.errors import AttnkitError


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
