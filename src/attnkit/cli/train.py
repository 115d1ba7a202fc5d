"""``attnkit train CONFIG``: :func:`attnkit.train` from the command line."""

from __future__ import annotations

from pathlib import Path

from attnkit.cli.options import add_command


def add_parser(sub) -> None:
    p = add_command(
        sub,
        "train",
        run,
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


def run(args) -> None:
    from attnkit.api import train
    from attnkit.training.distributed import rank

    result = train(args.config, args.overrides, args.output_dir, args.resume, args.overwrite)
    if rank() == 0:  # under torchrun, rank 0 speaks for the run
        print(f"best checkpoint: {result.best}")
