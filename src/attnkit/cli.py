"""The ``attnkit`` command (also ``python -m attnkit``).

Subcommands: demo, train, translate, evaluate, plot, explain, serve. Errors a user can cause
print one line ``attnkit: error: ...`` and exit with status 2. Training
stopped by Ctrl-C or SIGTERM saves ``last``, prints one line
``attnkit: interrupted: ...`` and exits with 130 (SIGINT) or 143 (SIGTERM).
"""

from __future__ import annotations

import argparse
import sys
import warnings
from pathlib import Path

from attnkit import __version__, families
from attnkit.errors import AttnkitError, TrainingInterrupted
from attnkit.serve.options import add_serve_parser


def _formatter(prog):
    return argparse.RawDescriptionHelpFormatter(prog, max_help_position=32)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="attnkit",
        formatter_class=_formatter,
        description="Train, compare and see attention models: RNN seq2seq with Bahdanau, Luong "
        "(dot, general, concat), scaled dot-product and multi-head attention, or none; visual "
        "soft and hard attention.",
        epilog="Run 'attnkit COMMAND --help' for the options of each command.",
    )
    parser.add_argument("--version", action="version", version=f"attnkit {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    _add_demo(sub)
    _add_train(sub)
    _add_translate(sub)
    _add_evaluate(sub)
    _add_plot(sub)
    _add_explain(sub)
    _threads_option(add_serve_parser(sub, _formatter))
    return parser


def _add_demo(sub) -> None:
    """The ``demo`` command's options."""
    p = sub.add_parser(
        "demo",
        formatter_class=_formatter,
        help="train a number translator and draw its attention",
        description="Generate the number-translation task (number words in en/de/fr/es -> digits, "
        "no download), train a Bahdanau-attention model for at most 2.25 minutes, "
        "print test exact-match and a few translations, and write heatmaps, the "
        "attention as JSON and an HTML report.",
    )
    p.add_argument(
        "--out", type=Path, default=Path("runs/demo"), help="output directory (default: runs/demo)"
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


def _add_train(sub) -> None:
    """The ``train`` command's options."""
    p = sub.add_parser(
        "train",
        formatter_class=_formatter,
        help="train from a YAML experiment file",
        description="Train the experiment in CONFIG (see configs/). Checkpoints go to "
        "OUTPUT_DIR/best (for decoding) and OUTPUT_DIR/last (also the optimizer state for "
        "--resume); output_dir defaults to runs/<name>. Under torchrun (torchrun "
        "--nproc_per_node N -m attnkit train CONFIG) N processes train one model "
        "data-parallel; rank 0 evaluates and saves.",
        epilog="examples: attnkit train configs/numbers_bahdanau.yaml --set "
        "model.decoder_hidden=128\n"
        "          attnkit train configs/numbers_bahdanau.yaml --resume --set train.epochs=40",
    )
    p.add_argument("config", type=Path, help="experiment YAML file")
    p.add_argument(
        "--set",
        dest="overrides",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="override a config key, e.g. --set train.lr=3e-4 (repeatable)",
    )
    p.add_argument(
        "--output-dir", type=Path, default=None, help="where checkpoints go (overrides output_dir)"
    )
    start = p.add_mutually_exclusive_group()
    start.add_argument(
        "--resume",
        action="store_true",
        help="continue from OUTPUT_DIR/last with the config saved there (the first run's --set "
        "need not be given again); a --set may change train.epochs, train.max_minutes, "
        "train.patience, train.eval_every and other keys of how the run goes on (each change is "
        "printed), and a change of the model, the data or the optimizer is refused",
    )
    start.add_argument(
        "--overwrite",
        action="store_true",
        help="start afresh in an OUTPUT_DIR that holds checkpoints, deleting them",
    )


def _add_translate(sub) -> None:
    """The ``translate`` command's options."""
    p = sub.add_parser(
        "translate",
        formatter_class=_formatter,
        help="translate text with a trained model",
        description="Translate each TEXT argument, or each line of standard input with '-' (or "
        "no TEXT). Prints one output per line; --attention-out saves every output's "
        "attention matrix as JSON or NPZ.",
    )
    p.add_argument(
        "--model",
        type=Path,
        action="append",
        required=True,
        metavar="DIR",
        help="checkpoint directory (e.g. runs/demo/model/best); repeat --model to decode several "
        "seq2seq checkpoints of one task as an ensemble (the mean of their output probabilities at "
        "every step)",
    )
    p.add_argument(
        "texts", nargs="*", metavar="TEXT", help="inputs; '-' or none reads standard input"
    )
    _decode_options(p)
    p.add_argument(
        "--n-best",
        type=int,
        default=1,
        help="print the N best outputs of each input, tab-separated",
    )
    p.add_argument(
        "--attention-out",
        type=Path,
        default=None,
        help="write the attention to FILE (.json or .npz); refused for a model without attention "
        "(model.attention: none: see attnkit explain)",
    )
    p.add_argument(
        "--scores", action="store_true", help="print the log-probability after each output"
    )


def _add_evaluate(sub) -> None:
    """The ``evaluate`` command's options."""
    p = sub.add_parser(
        "evaluate",
        formatter_class=_formatter,
        help="score a model on a split or on your own files, greedy and beam",
        description="Decode a split of the checkpoint's task (--split), or any test set of yours "
        "(--src FILE --ref FILE, one sentence per line; or --tsv FILE, source TAB reference), "
        "greedily and with beam search, and print a table of the task's metrics (exact match; "
        "WER/PER for G2P; BLEU/chrF for translation; for your own data, data.metric's: exact, "
        "bleu, chrf, wer or cer; error % for vision). Writes hypotheses, scores.json and "
        "report.html to --out.",
    )
    p.add_argument(
        "--model",
        type=Path,
        action="append",
        required=True,
        metavar="DIR",
        help="checkpoint directory; repeat --model to score several seq2seq checkpoints of one "
        "task (same vocabularies) as an ensemble (the mean of their output probabilities at every "
        "step)",
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
    p.add_argument("--device", default="auto", help="auto, cpu or cuda")
    p.add_argument(
        "--mc-samples",
        type=int,
        default=None,
        help="vision RAM models: glimpse paths averaged at test",
    )
    p.add_argument(
        "--json", action="store_true", help="print the scores as one JSON line, not a table"
    )
    _threads_option(p)


def _add_plot(sub) -> None:
    """The ``plot`` command's options."""
    p = sub.add_parser(
        "plot",
        formatter_class=_formatter,
        help="draw the attention of one input",
        description="Translate TEXT and draw its attention heatmap (source on x, output on y) "
        "to -o (.png, .svg or .pdf); for a model without attention (model.attention: none), its "
        "gradient saliency, titled so. For vision models, --image N draws test image N and "
        "--image FILE a PNG or JPEG of your own (made grey, white on black and the model's size, "
        "as its training images): -o FILE.png or .svg draws every step side by side, -o FILE.gif "
        "animates them, and -o DIR/ (a directory: ending in / or existing) gets both a .png and "
        "a .gif; --explain draws, beside the attention (RAM: the glimpse path), the gradient "
        "saliency and Grad-CAM of the same answer, one row per output step. A Transformer's map "
        "is the mean of all its layers and heads unless --layer and/or --head pick one; --grid "
        "draws every layer and head.",
    )
    p.add_argument("--model", type=Path, required=True, help="checkpoint directory")
    p.add_argument("text", nargs="?", help="the input to translate and draw")
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
    p.add_argument(
        "--image",
        default=None,
        metavar="N|FILE",
        help="vision models: the index of a test image, or a PNG/JPEG file",
    )
    p.add_argument(
        "--explain",
        action="store_true",
        help="vision models: the attention beside its implicit attention, the input-gradient "
        "saliency and Grad-CAM of each answer (-o .png, .svg or DIR/; seq2seq models: attnkit "
        "explain)",
    )
    p.add_argument(
        "-o",
        "--output",
        required=True,
        help="output file (.png, .svg or .pdf; vision: .png, .svg, .gif, or a directory DIR/)",
    )
    _decode_options(p)


def _add_explain(sub) -> None:
    """The ``explain`` command's options."""
    p = sub.add_parser(
        "explain",
        formatter_class=_formatter,
        help="attention beside gradient saliency (implicit attention)",
        description="For each input, force the model along its own output (or the reference, "
        "--reference) and draw the attention it pays beside the gradient saliency of every output "
        "token over the source (captum: gradient = the sequential Jacobian's norm, "
        "input x gradient, integrated gradients), on shared axes. Writes NNN.png, "
        "attention.json, saliency.json and scores.json (agreement of the two maps and, on the "
        "numbers and dates tasks, both scored against gold alignments) and report.html to --out; "
        "-o FILE draws one input's pair of maps to FILE alone. A model without "
        "attention (model.attention: none) gets its saliency alone.",
    )
    p.add_argument("--model", type=Path, required=True, help="seq2seq checkpoint directory")
    p.add_argument("texts", nargs="*", metavar="TEXT", help="inputs to explain")
    p.add_argument(
        "--split", choices=("dev", "test"), default=None, help="explain the first items of a split"
    )
    p.add_argument("--count", type=int, default=10, help="items of --split to explain (default 10)")
    p.add_argument(
        "--method",
        type=_saliency_method,
        default="gradient",
        metavar="{gradient,input_x_gradient,integrated_gradients}",
        help="saliency method (default: gradient; hyphens work too: input-x-gradient)",
    )
    p.add_argument(
        "--reference", action="store_true", help="explain the references of --split, not outputs"
    )
    p.add_argument(
        "-o",
        "--output",
        type=Path,
        default=None,
        help="draw ONE input (one TEXT, or --split with --count 1) to this file (.png or .svg: "
        "its suffix is the format) and write nothing else; the scores are printed",
    )
    p.add_argument(
        "--format", choices=("png", "svg"), default=None, help="picture format of --out (png)"
    )
    p.add_argument("--pictures", type=int, default=None, help="--out: draw the first N (20)")
    p.add_argument(
        "--out", type=Path, default=None, help="output directory (default: RUN/explain/CKPT)"
    )
    p.add_argument("--device", default="auto", help="auto, cpu or cuda")
    _threads_option(p)


def _saliency_method(name: str) -> str:
    """``--method``: a saliency method, hyphens or underscores (input-x-gradient)."""
    from attnkit.explain.saliency import METHODS  # only when explain runs (captum)

    method = name.replace("-", "_")
    if method not in METHODS:
        raise argparse.ArgumentTypeError(
            f"unknown saliency method {name!r}; valid: {', '.join(METHODS)}"
        )
    return method


def _decode_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--beam", type=int, default=1, help="beam size (default 1: greedy)")
    p.add_argument(
        "--alpha", type=float, default=None, help="length penalty exponent (default: the config's)"
    )
    p.add_argument("--device", default="auto", help="auto, cpu or cuda")
    _threads_option(p)


def _threads_option(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--threads",
        type=int,
        default=None,
        metavar="N",
        help="CPU threads for torch (default: OMP_NUM_THREADS if set, else 1: a second thread "
        "gains little on decoding's small per-step matmuls and costs a lot on a busy machine; "
        "see README)",
    )


# ---- commands -----------------------------------------------------------------
def cmd_demo(args) -> None:
    from attnkit.demo import run_demo

    run_demo(
        args.out,
        quick=args.quick,
        attention=args.attention,
        minutes=args.minutes,
        progress=not args.no_progress,
    )


def cmd_train(args) -> None:
    from attnkit.config import read_yaml
    from attnkit.training.distributed import rank

    data = read_yaml(args.config)
    best = families.of_experiment(data).train(data, args)
    if rank() == 0:  # under torchrun, rank 0 speaks for the run
        print(f"best checkpoint: {best}")


def cmd_translate(args) -> None:
    from attnkit.data.text_input import read_inputs
    from attnkit.translator import load_translator
    from attnkit.viz import save_records

    families.check_decode_args(args)
    texts = args.texts
    if not texts or texts == ["-"]:
        if sys.stdin is None or sys.stdin.isatty() and not texts:
            raise AttnkitError(
                "no input: give TEXT arguments or pipe lines into 'attnkit translate -'"
            )
        texts = read_inputs(getattr(sys.stdin, "buffer", sys.stdin))  # bytes: decoded, not trusted
    if args.attention_out is not None and args.attention_out.suffix not in (".json", ".npz"):
        raise AttnkitError(f"--attention-out {args.attention_out}: use a .json or .npz file name")
    translator = load_translator(args.model, args.device)
    if args.attention_out is not None and not translator.model.has_attention:
        raise AttnkitError(
            f"--attention-out {args.attention_out}: the model has no attention (model.attention: "
            "none); 'attnkit explain' draws and writes its gradient saliency instead"
        )
    results = translator.translate(
        texts,
        beam_size=args.beam,
        alpha=args.alpha,
        n_best=args.n_best,
        heads=args.attention_out is not None,  # a Transformer's records hold every head
    )
    for t in results:
        outputs = [(o.output + (f"\t{o.score:.4f}" if args.scores else "")) for o in t.nbest]
        print("\t".join(outputs))
    if args.attention_out is not None:
        save_records([t.record() for t in results], args.attention_out)
        print(
            f"attention of {len(results)} outputs written to {args.attention_out}", file=sys.stderr
        )


def cmd_evaluate(args) -> None:
    family = families.of_checkpoint(args.model[0])
    given = [f"--{name}" for name in ("src", "ref", "tsv") if getattr(args, name) is not None]
    if given and family.name != "seq2seq":
        raise AttnkitError(f"{' '.join(given)}: files of text are for seq2seq checkpoints")
    family.evaluate(args)


def cmd_plot(args) -> None:
    families.of_checkpoint(args.model).plot(args)


def cmd_explain(args) -> None:
    family = families.of_checkpoint(args.model)
    if family.explain is None:
        raise AttnkitError(f"--model {args.model}: explain is for seq2seq checkpoints")
    family.explain(args)


def cmd_serve(args) -> None:
    from attnkit.serve.options import settings_from_args
    from attnkit.serve.server import serve

    serve(settings_from_args(args))


COMMANDS = {
    "demo": cmd_demo,
    "train": cmd_train,
    "translate": cmd_translate,
    "evaluate": cmd_evaluate,
    "plot": cmd_plot,
    "explain": cmd_explain,
    "serve": cmd_serve,
}


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    formatwarning = warnings.formatwarning
    warnings.formatwarning = lambda msg, cat, *a, **k: f"attnkit: warning: {msg}\n"
    try:
        if hasattr(args, "threads"):  # translate, evaluate, plot, explain, serve
            from attnkit.device import set_threads

            set_threads(args.threads)
        COMMANDS[args.command](args)
    except TrainingInterrupted as exc:
        # one write per line: stderr on a pipe writes through, and print() writes the text and
        # its newline apart, so the lines of two torchrun ranks could run into each other
        sys.stderr.write(f"attnkit: interrupted: {exc}\n")
        return exc.exit_status
    except AttnkitError as exc:
        sys.stderr.write(f"attnkit: error: {exc}\n")
        return 2
    except KeyboardInterrupt:
        sys.stderr.write("attnkit: interrupted\n")
        return 130
    finally:
        warnings.formatwarning = formatwarning
    return 0


if __name__ == "__main__":
    sys.exit(main())
