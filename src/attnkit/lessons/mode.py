"""Quick mode and seeds of the lessons.

Quick mode: every lesson runs in a minute or two (CI, a first read) unless ``QUICK=0`` asks for
the full budgets that reproduce the figures of docs/RESULTS.md. ``SEED`` (default 0) reruns a
lesson under another seed, to see whether what it asserts holds beyond one run
(``benchmarks/lessons.py --seeds 0 1 2``): seed 0 is the lesson as written, its configs' own
training seeds included.
"""

from __future__ import annotations

import os
from typing import TypeVar

from attnkit.data.bounded import ascii_int
from attnkit.errors import ConfigError

T = TypeVar("T")

FALSE = ("0", "false", "no", "off")
#: SEED = k > 0 trains with ``train.seed`` TRAIN_SEED_BASE + k (apart from every config's own)
TRAIN_SEED_BASE = 1000


def quick() -> bool:
    """True unless the environment variable ``QUICK`` is 0 / false / no / off."""
    return os.environ.get("QUICK", "1").strip().lower() not in FALSE


def pick(quick_value: T, full_value: T) -> T:
    """``quick_value`` in quick mode, else ``full_value``."""
    return quick_value if quick() else full_value


def seed() -> int:
    """The environment variable ``SEED``: a whole number >= 0, 0 when unset or blank."""
    raw = os.environ.get("SEED", "").strip()
    if not raw:
        return 0
    if ascii_int(raw) is None or int(raw) >= 2**32 - TRAIN_SEED_BASE:
        raise ConfigError(f"SEED: expected a whole number >= 0, got {raw[:40]!r}")
    return int(raw)


def train_seed(default: int) -> int:
    """The ``train.seed`` of a lesson's model: ``default`` (what it trains with as written) for
    seed 0, else :data:`TRAIN_SEED_BASE` + seed."""
    k = seed()
    return default if k == 0 else TRAIN_SEED_BASE + k


def seeded(overrides: dict) -> dict:
    """``overrides`` of an ``attnkit.train`` call under the lesson's seed: unchanged for seed 0
    (the config keeps its own ``train.seed``), else with ``train.seed`` = 1000 + seed."""
    k = seed()
    return dict(overrides) if k == 0 else {**overrides, "train.seed": TRAIN_SEED_BASE + k}
