"""The options several commands share, each defined once: ``--model``, ``--device``,
``--threads``, the decoding options, the Transformer map choice and the saliency method."""

from __future__ import annotations

import argparse
from pathlib import Path

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
    help_text += " (or zoo:NAME, a model of `attnkit zoo`"
    help_text += "".join(f"; {scheme}:NAME" for scheme in schemes()) + ")"
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


def schemes() -> list[str]:
    """The schemes of the registry's families that load models of their own (``hf``)."""
    from attnkit.families import FAMILIES

    return [f.scheme for f in FAMILIES.values() if f.scheme is not None]


def device_option(p: argparse.ArgumentParser) -> None:
    p.add_argument("--device", default="auto", help="auto, cpu or cuda")


def data_dir_option(p: argparse.ArgumentParser) -> None:
    """``--data-dir``: where a loaded model reads its split (never the checkpoint's own paths,
    :func:`attnkit.data.location.checkpoint_data`); the families that read it list
    ``data_dir`` among their own options."""
    p.add_argument(
        "--data-dir",
        type=Path,
        default=None,
        metavar="DIR",
        help="the folder of the data set to read --split from (default: $ATTNKIT_DATA_DIR/<the "
        "data set's folder>, else the user cache; your own TSV files: the folder holding the "
        "split's file by its training name). A checkpoint's own data paths are never followed "
        "and nothing is downloaded",
    )


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


def run_hook(command: str, args: argparse.Namespace, model):
    """Run ``command``'s hook of the family of the checkpoint ``model`` (the registry's): a
    one-line error where the command does not apply to it, where an option given is another
    family's own, or where several checkpoints are given to a family that does not ensemble."""
    from attnkit.families import FAMILIES, checkpoint_family

    family = checkpoint_family(model)
    hook = family.hook(command)
    if hook is None:
        takers = [name for name, f in FAMILIES.items() if f.hook(command) is not None]
        raise AttnkitError(f"--model {model}: {command} is for {', '.join(takers)} checkpoints")
    mine = family.own_options.get(command, ())
    foreign = {
        "--" + option.replace("_", "-"): name
        for name, other in FAMILIES.items()
        for option in other.own_options.get(command, ())
        if option not in mine and getattr(args, option, None) is not None
    }
    if foreign:
        given, owners = " ".join(foreign), ", ".join(dict.fromkeys(foreign.values()))
        raise AttnkitError(f"{given}: for {owners} checkpoints, not a {family.name} one")
    models = getattr(args, "model", None)
    if isinstance(models, list) and len(models) > 1 and not family.ensembles:
        ensembling = [name for name, f in FAMILIES.items() if f.ensembles]
        raise AttnkitError(
            f"--model: ensembles are for {', '.join(ensembling)} checkpoints; give one checkpoint"
        )
    return hook(args)
