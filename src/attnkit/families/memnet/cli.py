"""The memnet family's command-line hooks: what ``attnkit plot``, ``evaluate`` and ``explain``
do with its checkpoints (the parsed arguments in). A command with no function here does not
apply to the family."""

from __future__ import annotations

import json
from pathlib import Path

from attnkit.data.babi import read_story_file
from attnkit.errors import AttnkitError
from attnkit.families.memnet.model import MemoryModel


def plot(args) -> None:
    if args.story is None or not args.text:
        raise AttnkitError("memory networks need --story FILE|TEXT and the question: TEXT")
    if args.layer is not None or args.head is not None or args.grid or args.explain:
        raise AttnkitError("--layer/--head/--grid/--explain: not for memory networks")
    if Path(args.output).suffix.lower() not in (".png", ".svg", ".pdf"):
        raise AttnkitError(f"-o {args.output}: use a .png, .svg or .pdf file name")
    story = Path(args.story)
    # a file (bounded: a regular file of bAbI's size cap), else the story's own text
    text = read_story_file(story) if story.is_file() else args.story
    a = MemoryModel.load(args.model, "cpu").answer(text, args.text)
    a.plot(args.output)
    unknown = f" (words it never saw: {', '.join(a.unknown)})" if a.unknown else ""
    print(f"{a.question} -> {a.answer}{unknown}\nhops: {args.output}")


def evaluate(args):
    if args.beam not in (1, 5) or args.alpha is not None:
        raise AttnkitError(
            "--beam/--alpha: a memory network answers each question in one pass; leave them out"
        )
    model = MemoryModel.load(args.model[0], args.device)
    return model.evaluate(args.split, args.out, stories=args.stories, data_dir=args.data_dir)


def explain(args) -> str:
    if args.texts or args.reference or args.output is not None:
        raise AttnkitError(
            "memory networks explain the questions of --split (TEXT, --reference and -o are "
            "for seq2seq models; one story of yours: MemoryModel.explain in Python)"
        )
    model = MemoryModel.load(args.model, args.device)
    split = args.split or "test"
    scores = model.explain_split(split, args.count, args.method, args.out, args.data_dir)
    return json.dumps(scores, indent=1)
