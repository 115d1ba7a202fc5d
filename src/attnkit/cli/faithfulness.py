"""``attnkit faithfulness``: is the attention an explanation? Erasure, rank agreement,
permutation and adversarial tests of a checkpoint's attention, on typed inputs or the first
items of a split: the ``faithfulness`` hook of the checkpoint's family
(:meth:`attnkit.api.Seq2SeqModel.faithfulness`, :meth:`attnkit.api.TextModel.faithfulness`,
:meth:`attnkit.api.VisionModel.faithfulness`)."""

from __future__ import annotations

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
        "faithfulness",
        run,
        help="is the attention an explanation? erasure, permutation, adversarial tests",
        description="Question a model's attention on each input, at every decision (each "
        "decoding step of a seq2seq model's own output; the class of an attention-pooling "
        "image classifier; each step of the digit reader; the label of a text classifier). Every "
        "position (source token, image region, word) is ranked by the attention, by attention "
        "rollout and flow (Transformers), by "
        "gradient, input x gradient and integrated gradients (captum), by leave-one-out erasure "
        "and at random; the top 1, 5, 10, 20 and 50% by each ranking are erased "
        "(comprehensiveness) or kept alone (sufficiency), ERASER's AOPC is their mean; Kendall "
        "tau and Spearman rho of the attention with gradients and leave-one-out are reported "
        "with the share that is significant; each attention row is permuted (--permutations) "
        "and the output change measured against the attention's peakedness; and the attention "
        "most different from the original that leaves the output within 0.01 total variation "
        "is searched for by gradient ascent (--adversarial-steps). Writes scores.json and "
        "report.html (with the AOPC curves) to --out and prints a short table.",
    )
    model_option(p, "seq2seq, vision or text checkpoint directory, or hf:DIR (a classifier)")
    p.add_argument(
        "inputs",
        nargs="*",
        metavar="TEXT",
        help="inputs to question (a vision model: test-image numbers or image files)",
    )
    p.add_argument(
        "--split",
        choices=("dev", "test"),
        default=None,
        help="question the first --count items of a split (the default without inputs: test)",
    )
    data_dir_option(p)
    p.add_argument(
        "--data",
        type=Path,
        default=None,
        metavar="FILE",
        help="pretrained (hf:) classifiers: question the first --count texts of FILE (one a "
        "line, label<TAB>text, or SST trees)",
    )
    p.add_argument(
        "--count",
        type=int,
        default=10,
        metavar="N",
        help="items of the split or of --data (default 10)",
    )
    p.add_argument(
        "--permutations",
        type=int,
        default=100,
        metavar="N",
        help="random permutations of each attention row (default 100; 0: no permutation test)",
    )
    p.add_argument(
        "--adversarial-steps",
        type=int,
        default=100,
        metavar="N",
        help="gradient steps of the adversarial search (default 100; 0: none)",
    )
    p.add_argument(
        "--ig-steps", type=int, default=16, metavar="N", help="integrated-gradients points (16)"
    )
    p.add_argument("--seed", type=int, default=0, help="seed of the random ranking and tests")
    p.add_argument(
        "--out", type=Path, default=None, help="output directory (default: RUN/faithfulness/CKPT)"
    )
    p.add_argument("--json", action="store_true", help="print the summary as JSON, not a table")
    device_option(p)
    threads_option(p)


def run(args) -> None:
    with writing(args.out or "the faithfulness directory (--out)", ""):
        scores = run_hook("faithfulness", args, args.model)
    if args.json:
        print(json.dumps(scores["summary"], indent=1))
    else:
        print(scores.table())
        if scores.out is not None:
            print(f"wrote {scores.out / 'scores.json'} and {scores.out / 'report.html'}")
