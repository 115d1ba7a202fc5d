"""The model zoo: small models trained by attnkit's own recipes, shipped as package data.

Each model is a checkpoint directory under ``attnkit/zoo/models/NAME`` (the files of
``RUN/best``: weights, config, vocabularies) and a row of ``models/index.json`` (its recipe, the
updates it trained, its test-set scores). ``benchmarks/zoo.py`` rebuilds each exactly from its
recipe (seed, epochs, one thread) and rewrites its row.

Wherever a checkpoint directory is accepted (``attnkit.load``, ``--model``), ``zoo:NAME`` names
a zoo model: :func:`resolve` turns it into its directory. ``attnkit zoo`` lists them.
"""

from __future__ import annotations

import argparse
import json
from functools import cache
from pathlib import Path
from typing import Any

from attnkit.errors import CheckpointError

PREFIX = "zoo:"
MODELS = Path(__file__).parent / "models"
#: the two models ``attnkit serve`` opens side by side when given no ``--model``
SIDE_BY_SIDE = ("numbers-bahdanau", "numbers-luong-general")
#: served after them: the real-language translator, then one model of each other kind the zoo
#: holds (image, graph, sentence, memory, pointer), each with its own view of the explorer
ONE_OF_EACH = (
    "multi30k-de-en",
    "mnist-ram",
    "cora-gat",
    "sst2-attention",
    "babi-task1",
    "pointer-hull10",
)


@cache
def index() -> dict[str, dict[str, Any]]:
    """Every zoo model's row of ``models/index.json``, by name, in the zoo's order."""
    path = MODELS / "index.json"
    if not path.is_file():
        return {}
    return json.loads(path.read_text(encoding="utf-8"))


def names() -> list[str]:
    return list(index())


def served() -> list[str]:
    """The models ``attnkit serve`` opens when given none: :data:`SIDE_BY_SIDE`, then
    :data:`ONE_OF_EACH`, those of them this installation's zoo holds."""
    return [name for name in (*SIDE_BY_SIDE, *ONE_OF_EACH) if name in index()]


def is_zoo(path: str | Path) -> bool:
    return str(path).startswith(PREFIX)


def resolve(path: str | Path) -> Path:
    """The checkpoint directory ``path`` names: ``zoo:NAME`` -> the zoo's model NAME; any other
    path as it is. An unknown zoo name is a one-line :class:`CheckpointError` listing the zoo."""
    if not is_zoo(path):
        return Path(path)
    name = str(path)[len(PREFIX) :]
    if name not in index():
        known = ", ".join(names()) or "no models (this installation has no zoo files)"
        raise CheckpointError(f"{path}: no such model in the zoo; it has {known}")
    return MODELS / name


#: where the outputs a command writes beside a zoo model's checkpoint go instead (the installed
#: package is no place to write): runs/zoo/eval/NAME-test, runs/zoo/explain/NAME
OUTPUTS = Path("runs") / "zoo"


def run_parent(directory: str | Path) -> Path:
    """The directory that outputs written beside the checkpoint ``directory`` go into: its
    parent, or :data:`OUTPUTS` for a model of the zoo."""
    directory = Path(directory)
    try:
        inside = directory.resolve().parent == MODELS.resolve()
    except OSError:
        inside = False
    return OUTPUTS if inside else directory.parent


def checkpoint_argument(text: str) -> Path:
    """argparse's ``type`` of a ``--model``: :func:`resolve`, an unknown zoo name being a
    one-line usage error."""
    try:
        return resolve(text)
    except CheckpointError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def score_line(name: str, how: str) -> str:
    """``NAME  exact_match 99.00% (greedy ...)  ...``: one model's row, for ``attnkit zoo``;
    ``how`` says how its test score was measured (its family's ``scoring``: ``greedy``)."""
    row = index()[name]
    test = row["test"]
    value = f"{test['value']:.2f}{'%' if test['percent'] else ''}"
    aer = "" if test.get("aer") is None else f", AER {test['aer']:.2f}"
    per = "" if test.get("per") is None else f", per {test['per']:.2f}%"  # a G2P model's
    # a memory network's: the tasks over 5% error
    failed = "" if test.get("failed_tasks") is None else f", {test['failed_tasks']} failed"
    return (
        f"zoo:{name:24s} {test['metric']} {value} ({how}{per}{aer}{failed}; "
        f"{row['parameters']:,} parameters)"
        f"  {row['about']}"
    )
