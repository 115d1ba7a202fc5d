"""Which tasks have gold alignments, and the function that gives them for a data config."""

from __future__ import annotations

import functools
from collections.abc import Callable

from attnkit.data.tasks.alignment import Alignment

Aligner = Callable[[str, str], Alignment | None]


def gold_aligner(data_cfg) -> Aligner | None:
    """``(source, target) -> Alignment | None`` for the task of ``data_cfg``, or None where the
    task has no gold links (files of the user's own, G2P, Multi30k) or is not read character by
    character on both sides (the links are between characters)."""
    levels = (getattr(data_cfg, "src_level", "char"), getattr(data_cfg, "tgt_level", "char"))
    if levels != ("char", "char"):
        return None
    if data_cfg.task == "numbers":
        from attnkit.data.tasks import numbers

        return functools.partial(numbers.gold_alignment, languages=tuple(data_cfg.languages))
    if data_cfg.task == "dates":
        from attnkit.data.tasks import dates

        return dates.gold_alignment
    return None
