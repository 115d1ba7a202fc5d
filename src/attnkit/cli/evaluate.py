"""``attnkit evaluate``: :meth:`Seq2SeqModel.evaluate` / :meth:`VisionModel.evaluate` /
:meth:`TextModel.evaluate`."""

from __future__ import annotations

import json
from pathlib import Path

from attnkit.cli.options import (
    add_command,
    check_decode_args,
    device_option,
    model_option,
    threads_option,
)
from attnkit.errors import AttnkitError, writing


def add_parser(sub) -> None:
    p = add_command(
        sub,
        "evaluate",
        run,
        help="score a model on a split or on your own files, greedy and beam",
        description="Decode a split of the checkpoint's task (--split), or any test set of yours "
        "(--src FILE --ref FILE, one sentence per line; or --tsv FILE, source TAB reference), "
        "greedily and with beam search, and print a table of the task's metrics (exact match; "
        "WER/PER for G2P; BLEU/chrF for translation; for your own data, data.metric's: exact, "
        "bleu, chrf, wer or cer; error % for vision; node accuracy for graph models; accuracy for "
        "text classifiers; per-task error, failed tasks and supporting-fact attention for bAbI "
        "memory networks). Writes hypotheses, scores.json and report.html to --out.",
    )
    model_option(
        p,
        "checkpoint directory; repeat --model to score several seq2seq checkpoints of one "
        "task (same vocabularies) as an ensemble (the mean of their output probabilities at every "
        "step)",
        many=True,
    )
    p.add_argument(
        "--split",
        choices=("dev", "test"),
        default="test",
        help="the split of the checkpoint's task to score (default test; read from where the "
        "training config named it)",
    )
    p.add_argument("--src", type=Path, default=None, metavar="FILE", help="sources to score")
    p.add_argument(
        "--ref", type=Path, default=None, metavar="FILE", help="their references, line by line"
    )
    p.add_argument(
        "--tsv", type=Path, default=None, metavar="FILE", help="source<TAB>reference lines"
    )
    p.add_argument(
        "--stories",
        type=Path,
        default=None,
        metavar="FILE",
        help="memory networks: score the questions of a bAbI-format file of yours",
    )
    p.add_argument(
        "--beam",
        type=int,
        default=5,
        help="beam size for the beam run (default 5; 1 = greedy only)",
    )
    p.add_argument(
        "--alpha", type=float, default=None, help="length penalty exponent (default: the config's)"
    )
    p.add_argument(
        "--out",
        type=Path,
        default=None,
        help="output directory (default: RUN/eval/CKPT-SPLIT for --model RUN/CKPT; "
        "RUN/eval/CKPT-FILENAME for --src or --tsv FILENAME)",
    )
    device_option(p)
    p.add_argument(
        "--mc-samples",
        type=int,
        default=None,
        help="vision RAM models: glimpse paths averaged at test",
    )
    p.add_argument(
        "--json", action="store_true", help="print the scores as one JSON line, not a table"
    )
    threads_option(p)


def run(args) -> None:
    from attnkit.api.loading import checkpoint_family

    family = checkpoint_family(args.model[0])
    given = [f"--{name}" for name in ("src", "ref", "tsv") if getattr(args, name) is not None]
    if args.stories is not None and family != "memnet":
        raise AttnkitError("--stories: bAbI stories are for memory-network checkpoints")
    if given and family != "seq2seq":
        raise AttnkitError(f"{' '.join(given)}: files of text are for seq2seq checkpoints")
    with writing(args.out or "the evaluation directory (--out)", ""):
        scores = EVALUATORS[family](args)
    print(json.dumps(scores.to_dict()) if args.json else scores.table())


def _seq2seq(args):
    from attnkit.api import Seq2SeqModel
    from attnkit.evaluation.inputs import EvalFiles

    check_decode_args(args)
    EvalFiles(args.src, args.ref, args.tsv)  # --src without --ref and the like: before loading
    model = Seq2SeqModel.load(args.model, args.device)
    return model.evaluate(
        args.split,
        src=args.src,
        ref=args.ref,
        tsv=args.tsv,
        beam=args.beam,
        alpha=args.alpha,
        out=args.out,
    )


def _vision(args):
    from attnkit.api import VisionModel

    if len(args.model) > 1:
        raise AttnkitError(
            "--model: ensembles are for seq2seq checkpoints; give one vision checkpoint"
        )
    refuse_decoding_options(args)
    model = VisionModel.load(args.model[0], args.device)
    return model.evaluate(args.split, args.mc_samples, args.out)


def _pointer(args):
    from attnkit.api import PointerModel

    if len(args.model) > 1:
        raise AttnkitError("--model: ensembles are for seq2seq checkpoints; give one pointer model")
    if args.alpha is not None:
        raise AttnkitError(
            f"--alpha {args.alpha}: a pointer network's outputs have no length penalty"
        )
    model = PointerModel.load(args.model[0], args.device)
    return model.evaluate(args.split, args.beam, args.out)


def _graph(args):
    from attnkit.api import GraphModel

    if len(args.model) > 1:
        raise AttnkitError("--model: ensembles are for seq2seq checkpoints; give one checkpoint")
    refuse_decoding_options(args)
    if args.mc_samples is not None:
        raise AttnkitError("--mc-samples is for vision RAM models")
    return GraphModel.load(args.model[0], args.device).evaluate(args.split, args.out)


def _text(args):
    from attnkit.api import TextModel

    if len(args.model) > 1:
        raise AttnkitError(
            "--model: ensembles are for seq2seq checkpoints; give one text checkpoint"
        )
    refuse_decoding_options(args)
    if args.mc_samples is not None:
        raise AttnkitError("--mc-samples is for vision RAM models")
    return TextModel.load(args.model[0], args.device).evaluate(args.split, args.out)


def _memnet(args):
    from attnkit.api import MemoryModel

    if len(args.model) > 1:
        raise AttnkitError("--model: ensembles are for seq2seq checkpoints; give one checkpoint")
    if args.beam not in (1, 5) or args.alpha is not None or args.mc_samples is not None:
        raise AttnkitError(
            "--beam/--alpha/--mc-samples: a memory network answers each question in one pass; "
            "leave them out"
        )
    model = MemoryModel.load(args.model[0], args.device)
    return model.evaluate(args.split, args.out, stories=args.stories)


#: a checkpoint's family -> how ``evaluate`` scores it
EVALUATORS = {
    "seq2seq": _seq2seq,
    "vision": _vision,
    "pointer": _pointer,
    "graph": _graph,
    "text": _text,
    "memnet": _memnet,
}


def refuse_decoding_options(args) -> None:
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
