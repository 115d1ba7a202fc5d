"""The vision family's command-line hooks: what ``attnkit plot``, ``evaluate`` and ``explain``
do with its checkpoints (the parsed arguments in). A command with no function here does not
apply to the family."""

from __future__ import annotations

from attnkit.data.bounded import ascii_int
from attnkit.errors import AttnkitError
from attnkit.families.commands import faithfulness_options, refuse_decoding_options
from attnkit.families.vision.model import VisionModel


def plot(args) -> None:
    if args.layer is not None or args.head is not None or args.grid or args.map != "attention":
        raise AttnkitError(
            "--layer/--head/--grid/--map: a vision model has no layers of attention heads"
        )
    if args.image is None:
        raise AttnkitError(
            "vision models need --image N (the index of a test image) or --image FILE (a PNG or "
            "JPEG)"
        )
    model = VisionModel.load(args.model, "cpu")
    for path in model.draw(args.image, args.output, explain=args.explain):
        print(path)


def evaluate(args):
    refuse_decoding_options(
        args,
        "a vision model answers each image",
        " (RAM: --mc-samples sets the glimpse paths averaged per image)",
    )
    model = VisionModel.load(args.model[0], args.device)
    return model.evaluate(args.split, args.mc_samples, args.out, args.data_dir)


def faithfulness(args):
    """``attnkit faithfulness``: the tests on test images (indices) or image files."""
    if args.split not in (None, "test"):
        raise AttnkitError("--split: a vision model is questioned on test images")
    images = [t if ascii_int(t) is None else int(t) for t in args.inputs] or None
    model = VisionModel.load(args.model, args.device)
    return model.faithfulness(images, **faithfulness_options(args))
