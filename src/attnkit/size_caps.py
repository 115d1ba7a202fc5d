"""The size caps of a checkpoint's config: every integer of its size-bearing sections (layers,
heads, widths, beams...) at most a cap far above any real model, checked before anything is
built (:func:`check_sizes`, run by :func:`attnkit.checkpoint.read_config` on every checkpoint
config). The rest of the checks before allocation are :mod:`attnkit.checkpoint.validate`'s.
"""

from __future__ import annotations

import re

from attnkit.errors import CheckpointError

#: the sections of a checkpoint config whose integers are sizes
SIZED_SECTIONS = ("model", "decode")
#: (pattern of a key's name, cap): the first pattern that matches applies; ``WIDTH_CAP`` else
CAPS: tuple[tuple[str, int], ...] = (
    (r"layers$", 256),
    (r"heads$", 256),
    (r"^scales?$|scale_factor$", 16),
    (r"glimpses$", 1024),
    (r"^(beam_size|n_best)$", 1024),
    (r"^(max_len_cap|max_len_extra|batch_size)$", 100_000),
    (r"^max_positions$", 65_536),  # rows of a learned position table (x the model width)
)
#: any other integer (a width: embedding, hidden, feed-forward, attention, patch)
WIDTH_CAP = 65_536


def cap_of(name: str) -> int:
    """The largest value a size key called ``name`` may hold."""
    return next((cap for pattern, cap in CAPS if re.search(pattern, name)), WIDTH_CAP)


def check_sizes(config: dict, where: str) -> None:
    """CheckpointError naming the first integer of :data:`SIZED_SECTIONS` above its cap (a list
    of integers is checked item by item)."""
    for section in SIZED_SECTIONS:
        values = config.get(section)
        if isinstance(values, dict):
            _check_mapping(values, f"{where}: {section}")


def _check_mapping(values: dict, prefix: str) -> None:
    for name, value in values.items():
        key = f"{prefix}.{name}"
        items = value if isinstance(value, list) else [value]
        for item in items:
            if isinstance(item, dict):
                _check_mapping(item, key)
            elif isinstance(item, int) and not isinstance(item, bool):
                cap = cap_of(str(name))
                if item > cap:
                    raise CheckpointError(
                        f"{key}: {item if item < 10**30 else 'a huge number'} is above the cap "
                        f"of {cap:,} (no real model needs more; the checkpoint is not loaded)"
                    )
