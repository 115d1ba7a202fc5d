"""Which tasks have gold alignments, and the function that gives them for a data config."""

from __future__ import annotations

import functools
from collections.abc import Callable

from attnkit.data.tasks.alignment import Alignment

Aligner = Callable[[str, str], Alignment | None]


def _numbers(data_cfg) -> Aligner:
    from attnkit.data.tasks import numbers

    return functools.partial(numbers.gold_alignment, languages=tuple(data_cfg.languages))


def _dates(data_cfg) -> Aligner:
    from attnkit.data.tasks import dates

    return dates.gold_alignment


def _phrases(data_cfg) -> Aligner:
    from attnkit.data.tasks import phrases

    return functools.partial(
        phrases.gold_alignment, src_lang=data_cfg.src_lang, tgt_lang=data_cfg.tgt_lang
    )


GOLD_TASKS: dict[str, tuple[tuple[str, str], Callable[..., Aligner]]] = {
    "numbers": (("char", "char"), _numbers),
    "dates": (("char", "char"), _dates),
    "phrases": (("word", "word"), _phrases),
}
"""Task -> (the source and target levels its links are between, its aligner's builder)."""


def gold_aligner(data_cfg) -> Aligner | None:
    """``(source, target) -> Alignment | None`` for the task of ``data_cfg``, or None where the
    task has no gold links (files of the user's own, G2P, Multi30k) or is not read at the level
    its links are between (characters for numbers and dates, words for phrases)."""
    entry = GOLD_TASKS.get(data_cfg.task)
    if entry is None:
        return None
    levels = (getattr(data_cfg, "src_level", "char"), getattr(data_cfg, "tgt_level", "char"))
    if levels != entry[0]:
        return None
    return entry[1](data_cfg)
