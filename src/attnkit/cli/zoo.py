"""``attnkit zoo``: the models that ship with attnkit, with their test-set scores."""

from __future__ import annotations

from attnkit.cli.options import add_command


def add_parser(sub) -> None:
    add_command(
        sub,
        "zoo",
        run,
        help="list the pretrained models that ship with attnkit (zoo:NAME)",
        description="List the model zoo: small models trained by attnkit's own recipes "
        "(benchmarks/zoo.py rebuilds each), with their test-set scores. Give one wherever a "
        "checkpoint is asked for: --model zoo:NAME, attnkit.load('zoo:NAME'). attnkit serve "
        "with no --model opens two of them side by side.",
    )


def run(args) -> None:
    from attnkit import zoo
    from attnkit.families import checkpoint_family

    names = zoo.names()
    if not names:
        print(
            "the zoo is empty: this installation has no zoo files (benchmarks/zoo.py builds them)"
        )
        return
    for name in names:  # the family its meta.json names says how its score was measured
        print(zoo.score_line(name, checkpoint_family(zoo.MODELS / name).scoring))
    print(
        "\nuse: attnkit translate --model zoo:NAME TEXT (images: attnkit plot --model "
        "zoo:mnist-ram --image 0 -o glimpses.png); attnkit serve --model zoo:NAME "
        "[--model zoo:OTHER]; attnkit.load('zoo:NAME')"
    )
