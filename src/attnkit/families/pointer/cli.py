"""The pointer family's command-line hooks: what ``attnkit plot``, ``evaluate`` and ``explain``
do with its checkpoints (the parsed arguments in). A command with no function here does not
apply to the family."""

from __future__ import annotations

from pathlib import Path

from attnkit.errors import AttnkitError
from attnkit.families.pointer.model import PointerModel


def plot(args) -> None:
    """TEXT is the points: ``"0.1,0.2 0.9,0.1 0.5,0.9"`` (x,y pairs; sort: numbers)."""
    if args.image is not None or args.explain or args.grid:
        raise AttnkitError("--image/--explain/--grid are for vision and seq2seq models")
    if not args.text:
        raise AttnkitError('give the points as TEXT, e.g. "0.1,0.2 0.9,0.1 0.5,0.9"')
    output = Path(args.output)
    if output.suffix.lower() not in (".png", ".svg", ".pdf"):
        raise AttnkitError(f"-o {output}: use a .png, .svg or .pdf file name")
    model = PointerModel.load(args.model, args.device)
    solution = model.solve(parse_points(args.text), beam=args.beam or 1)
    solution.plot(str(output)).clear()
    print(f"order: {' '.join(map(str, solution.order))}\npicture: {output}")


def parse_points(text: str) -> list[list[float]]:
    """``"0.1,0.2 0.9,0.1"`` -> [[0.1, 0.2], [0.9, 0.1]]; a bad number is one AttnkitError."""
    points = []
    for i, item in enumerate(text.replace(";", " ").split()):
        try:
            points.append([float(x) for x in item.split(",")])
        except ValueError:
            raise AttnkitError(f"point {i + 1} ({item!r}): expected numbers x,y") from None
    if len({len(p) for p in points}) > 1:
        raise AttnkitError("points: give every point the same number of coordinates")
    return points


def evaluate(args):
    if args.alpha is not None:
        raise AttnkitError(
            f"--alpha {args.alpha}: a pointer network's outputs have no length penalty"
        )
    model = PointerModel.load(args.model[0], args.device)
    return model.evaluate(args.split, args.beam, args.out)
