"""Quick mode: every lesson runs in a minute or two (CI, a first read) unless ``QUICK=0`` asks
for the full budgets that reproduce the figures of docs/RESULTS.md."""

from __future__ import annotations

import os
from typing import TypeVar

T = TypeVar("T")

FALSE = ("0", "false", "no", "off")


def quick() -> bool:
    """True unless the environment variable ``QUICK`` is 0 / false / no / off."""
    return os.environ.get("QUICK", "1").strip().lower() not in FALSE


def pick(quick_value: T, full_value: T) -> T:
    """``quick_value`` in quick mode, else ``full_value``."""
    return quick_value if quick() else full_value
