"""The one registry of attnkit's families: :data:`FAMILIES`, name -> :class:`Family`.

Each family lives in its own folder beside this file and gives one :class:`Family` record; the
line below that lists it is the only place outside the folder that names it. ``api/``, ``serve/``
and ``cli/`` iterate this registry: adding a family is one folder and one line here
(docs/FAMILIES.md). No family imports another.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from attnkit.errors import CheckpointError, ConfigError
from attnkit.families import graph, hf, memnet, pointer, seq2seq, speech, text, vision
from attnkit.families.base import ConfigSummary, Family, TrainRequest

#: every family, by the name its experiment files and checkpoints carry
FAMILIES: dict[str, Family] = {
    f.name: f
    for f in (
        seq2seq.FAMILY,
        vision.FAMILY,
        text.FAMILY,
        graph.FAMILY,
        memnet.FAMILY,
        pointer.FAMILY,
        speech.FAMILY,
        hf.FAMILY,
    )
}
#: the family of an experiment file that names none (the first, and oldest)
DEFAULT_FAMILY = next(iter(FAMILIES))

__all__ = [
    "DEFAULT_FAMILY",
    "FAMILIES",
    "ConfigSummary",
    "Family",
    "TrainRequest",
    "checkpoint_family",
    "family_of",
    "registered",
    "scheme_family",
]


def family_of(name: object, where: str = "family") -> Family:
    """The family called ``name``; a ConfigError naming ``where`` and the known ones otherwise."""
    if not isinstance(name, str) or name not in FAMILIES:
        raise ConfigError(f"{where}: {name!r} is no family; choose one of {', '.join(FAMILIES)}")
    return FAMILIES[name]


def scheme_family(path: object) -> Family | None:
    """The family whose ``scheme`` ``path`` starts with (``"<scheme>:<rest>"``), or None."""
    return next((f for f in FAMILIES.values() if f.owns(path)), None)


def checkpoint_family(directory: str | Path) -> Family:
    """The family of the checkpoint in ``directory`` (its ``meta.json``; a run directory: its
    ``best/``), or of the model a ``"<scheme>:<rest>"`` name names (:func:`scheme_family`)."""
    from attnkit.checkpoint import checkpoint_dir, read_meta

    named = scheme_family(directory)
    if named is not None:
        return named
    directory = checkpoint_dir(directory)
    name = read_meta(directory)["family"]
    if name not in FAMILIES:
        raise CheckpointError(
            f"{directory}: a {name!r} checkpoint; this attnkit loads {', '.join(FAMILIES)}"
        )
    return FAMILIES[name]


@contextmanager
def registered(family: Family) -> Iterator[Family]:
    """``family`` in the registry while the block runs (a family defined outside attnkit, as
    the family contract test does); the registry as it was afterwards."""
    if family.name in FAMILIES:
        raise ConfigError(f"family {family.name!r} is registered already")
    FAMILIES[family.name] = family
    try:
        yield family
    finally:
        del FAMILIES[family.name]
