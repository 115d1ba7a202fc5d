"""``attnkit evaluate``: a checkpoint scored on a split (or files of text) by the ``evaluate``
hook of its family (``attnkit.families.<name>.cli``), which calls its model's ``evaluate``."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from attnkit.cli.options import (
    add_command,
    data_dir_option,
    device_option,
    model_option,
    run_hook,
    threads_option,
)
from attnkit.errors import writing


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
        help="the split of the checkpoint's task to score (default test; read from --data-dir, "
        "else $ATTNKIT_DATA_DIR/<the data set's folder>, else the user cache, never from the "
        "checkpoint's own data paths; generated tasks are generated again)",
    )
    p.add_argument("--src", type=Path, default=None, metavar="FILE", help="sources to score")
    p.add_argument(
        "--ref", type=Path, default=None, metavar="FILE", help="their references, line by line"
    )
    p.add_argument(
        "--tsv", type=Path, default=None, metavar="FILE", help="source<TAB>reference lines"
    )
    p.add_argument(
        "--gold",
        type=Path,
        default=None,
        metavar="PATH",
        help="pretrained (hf:) translators: the AER of their cross-attention against human word "
        "alignments (a NAME.src-tgt / NAME.gold pair, or their directory)",
    )
    _memory_options(p)
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
    _examples_option(p)
    p.add_argument(
        "--json", action="store_true", help="print the scores as one JSON line, not a table"
    )
    threads_option(p)


def _examples_option(p: argparse.ArgumentParser) -> None:
    """``--examples``: how many examples a seq2seq report pictures (0: none)."""
    p.add_argument(
        "--examples",
        type=int,
        default=None,
        metavar="N",
        help="seq2seq: the most examples report.html pictures with their attention (errors "
        "first; default 120, fewer where long inputs would pass the report's bound of map "
        "cells); 0: scores and hypotheses only, no attention records (the cheap way to score "
        "long inputs)",
    )


def _memory_options(p: argparse.ArgumentParser) -> None:
    """The memory networks' own options: their questions from a file, or from a directory."""
    p.add_argument(
        "--stories",
        type=Path,
        default=None,
        metavar="FILE",
        help="memory networks: score the questions of a bAbI-format file of yours",
    )
    data_dir_option(p)


def run(args) -> None:
    with writing(args.out or "the evaluation directory (--out)", ""):
        scores = run_hook("evaluate", args, args.model[0])
    print(json.dumps(scores.to_dict()) if args.json else scores.table())
