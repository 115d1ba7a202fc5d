"""The toy family's command-line hooks: plot and evaluate (no explain)."""

from __future__ import annotations

from attnkit.errors import AttnkitError
from toyfamily.model import ToyModel


def plot(args) -> None:
    try:
        numbers = [float(x) for x in (args.text or "").split()]
    except ValueError:
        raise AttnkitError("give the numbers as TEXT, e.g. '1 5 2'") from None
    weights, value = ToyModel.load(args.model).attend(numbers)
    from matplotlib.figure import Figure

    figure = Figure()
    figure.add_subplot().bar(range(len(weights)), weights)
    figure.savefig(args.output)
    print(f"pooled {value:.3f}: {args.output}")


def evaluate(args):
    return ToyModel.load(args.model[0]).evaluate(args.split or "test", args.out)
