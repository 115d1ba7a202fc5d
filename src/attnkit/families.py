"""The model families and what the ``attnkit`` commands do with each.

An experiment file names its family (``family:``, seq2seq when absent) and so does every
checkpoint (``meta.json``). :data:`FAMILIES` maps the name to a :class:`Family`: how to train an
experiment of it, evaluate and plot a checkpoint of it, and load one. The command line
(:mod:`attnkit.cli`) looks the family up here and calls its functions; a family this registry
does not know goes to seq2seq, whose config and checkpoint checks name the family they expected.
The ``train``, ``evaluate`` and ``plot`` functions take the command's parsed arguments.
"""

from __future__ import annotations

import argparse
import json
import math
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from attnkit.errors import AttnkitError


@dataclass(frozen=True)
class Family:
    """What the commands do with the experiments and checkpoints of one family."""

    name: str
    train: Callable[[dict, argparse.Namespace], Path]  # (experiment mapping, args) -> best/
    evaluate: Callable[[argparse.Namespace], None]  # writes scores and a report, prints a summary
    plot: Callable[[argparse.Namespace], None]  # draws attention (or saliency), prints the file
    load: Callable[[Path, str], object]  # (checkpoint directory, device) -> the loaded model
    explain: Callable[[argparse.Namespace], None] | None = None  # saliency beside attention


def check_decode_args(args: argparse.Namespace) -> None:
    """``--beam``, ``--alpha`` and ``--n-best`` of a decoding command, or one-line errors."""
    if args.beam < 1:
        raise AttnkitError(f"--beam must be at least 1, got {args.beam}")
    if args.alpha is not None and not (math.isfinite(args.alpha) and args.alpha >= 0):
        raise AttnkitError(f"--alpha must be a finite number >= 0, got {args.alpha}")
    n_best = getattr(args, "n_best", 1)
    if not 1 <= n_best <= max(args.beam, 1):
        raise AttnkitError(f"--n-best must be between 1 and --beam ({args.beam}), got {n_best}")


# ---- seq2seq ----------------------------------------------------------------------------------
def _train_seq2seq(data: dict, args: argparse.Namespace) -> Path:
    from attnkit.evaluation.evaluate import evaluate_translator
    from attnkit.experiment import experiment_from_dict
    from attnkit.training.trainer import train_experiment

    cfg = experiment_from_dict(
        data, args.overrides, source=str(args.config), user=True, config_dir=args.config.parent
    )
    if args.output_dir is not None:  # a path, never parsed as YAML
        cfg.output_dir = str(args.output_dir)
    if args.resume:  # the run's own config, changed where this call's --set asks
        from attnkit.training.distributed import rank
        from attnkit.training.seq2seq_setup import config_to_resume

        cfg, note = config_to_resume(cfg, args.overrides, str(args.config))
        if note and rank() == 0:
            print(note)
    return train_experiment(
        cfg, resume=args.resume, overwrite=args.overwrite, dev_scorer=evaluate_translator
    )


def _evaluate_seq2seq(args: argparse.Namespace) -> None:
    from attnkit.evaluation.inputs import EvalFiles
    from attnkit.evaluation.report import evaluate_model
    from attnkit.evaluation.summary import scores_table

    check_decode_args(args)
    files = EvalFiles(args.src, args.ref, args.tsv)
    scores = evaluate_model(
        args.model, args.split, args.beam, args.alpha, args.out, args.device, files
    )
    print(json.dumps(scores) if args.json else scores_table(scores))


def _plot_seq2seq(args: argparse.Namespace) -> None:
    from attnkit.viz import save_heatmap

    args.output = Path(args.output)  # the command line gives a string (vision reads "dir/")
    if getattr(args, "explain", False):
        raise AttnkitError(
            "--explain is for vision models; a seq2seq model's saliency: attnkit explain "
            f"--model {args.model} TEXT"
        )
    check_decode_args(args)
    if not args.text:
        raise AttnkitError("give the TEXT to translate and draw")
    if args.output.suffix.lower() not in (".png", ".svg", ".pdf"):
        raise AttnkitError(f"-o {args.output}: use a .png, .svg or .pdf file name")
    translator = _load_seq2seq(args.model, args.device)
    (t,) = translator.translate([args.text], beam_size=args.beam, alpha=args.alpha, heads=True)
    if translator.model.has_attention:
        _draw_attention(t.record(), args)
        print(f"{t.source} -> {t.output}\nheatmap: {args.output}")
        return
    if args.layer is not None or args.head is not None or args.grid:
        raise AttnkitError("--layer/--head/--grid: the model has no attention to draw")
    from attnkit.explain.no_attention import TITLE, pictured

    if not t.source_tokens:
        raise AttnkitError("the input is blank: nothing was decoded, nothing to draw")
    (shown,) = pictured(translator, [t])
    save_heatmap(shown.record(), args.output, title=TITLE, value_label="saliency")
    print(f"{t.source} -> {t.output}\nsaliency (the model has no attention): {args.output}")


def _draw_attention(record, args: argparse.Namespace) -> None:
    """The map ``plot`` draws: the mean, one layer or head (--layer/--head), or all (--grid)."""
    from attnkit.viz import save_heatmap
    from attnkit.viz.heads import choose_map, map_title, plot_head_grid

    if args.grid:
        if args.layer is not None or args.head is not None:
            raise AttnkitError("--grid draws every layer and head: leave out --layer/--head")
        plot_head_grid(record, args.output).clear()
        return
    chosen = choose_map(record, args.layer, args.head)
    title = map_title(args.layer, args.head) if record.heads is not None else None
    save_heatmap(chosen, args.output, title=title)


def _explain_seq2seq(args: argparse.Namespace) -> None:
    from attnkit.evaluation.explain_report import explain_model

    scores = explain_model(
        args.model,
        texts=args.texts or None,
        split=args.split,
        count=args.count,
        method=args.method,
        reference=args.reference,
        out_dir=args.out,
        image_format=args.format,
        device=args.device,
        pictures=args.pictures,
        picture=args.output,
    )
    print(json.dumps(scores, indent=1))


def _load_seq2seq(model_dir: Path, device: str):
    """A :class:`attnkit.translator.Translator`."""
    from attnkit.translator import Translator

    return Translator.load(model_dir, device)


# ---- vision -----------------------------------------------------------------------------------
def _train_vision(data: dict, args: argparse.Namespace) -> Path:
    from attnkit.training.vision import train_vision

    return train_vision(
        data,
        output_dir=args.output_dir,
        resume=args.resume,
        source=str(args.config),
        overwrite=args.overwrite,
        overrides=args.overrides,
    )


def _evaluate_vision(args: argparse.Namespace) -> None:
    from attnkit.evaluation.vision import evaluate_to_dir, summary

    if len(args.model) > 1:
        raise AttnkitError(
            "--model: ensembles are for seq2seq checkpoints; give one vision checkpoint"
        )
    _refuse_decoding_options(args)
    scores = evaluate_to_dir(
        args.model[0], args.split, args.mc_samples, args.device, getattr(args, "out", None)
    )
    print(json.dumps(scores) if getattr(args, "json", False) else summary(scores))


def _refuse_decoding_options(args: argparse.Namespace) -> None:
    """A vision model answers each image in one pass: no beam search, no length penalty.

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


def _plot_vision(args: argparse.Namespace) -> None:
    if args.layer is not None or args.head is not None or args.grid:
        raise AttnkitError("--layer/--head/--grid: a vision model has no layers of attention heads")
    if args.image is None:
        raise AttnkitError(
            "vision models need --image N (the index of a test image) or --image FILE (a PNG or "
            "JPEG)"
        )
    if getattr(args, "explain", False):  # captum is loaded only for this
        from attnkit.explain.vision import plot_explained as plot
    else:
        from attnkit.explain.vision_plot import plot_vision as plot
    for path in plot(args.model, args.image, args.output):
        print(path)


def _load_vision(model_dir: Path, device: str):
    """(config, model type, model in eval mode)."""
    from attnkit.training.vision_checkpoint import load_vision_model

    return load_vision_model(model_dir, device)


FAMILIES: dict[str, Family] = {
    "seq2seq": Family(
        "seq2seq", _train_seq2seq, _evaluate_seq2seq, _plot_seq2seq, _load_seq2seq, _explain_seq2seq
    ),
    "vision": Family("vision", _train_vision, _evaluate_vision, _plot_vision, _load_vision),
}
DEFAULT = "seq2seq"  # an experiment file without ``family:`` is a seq2seq one


def of_experiment(data: dict) -> Family:
    """The family of an experiment mapping (its ``family:`` key)."""
    return _lookup(data.get("family", DEFAULT))


def of_checkpoint(model_dir: Path) -> Family:
    """The family of a checkpoint directory (``meta.json``, checked first)."""
    from attnkit.checkpoint import read_meta

    return _lookup(read_meta(model_dir)["family"])


def _lookup(name: object) -> Family:
    known = isinstance(name, str) and name in FAMILIES
    return FAMILIES[name if known else DEFAULT]
