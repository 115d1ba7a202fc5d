"""Which torch device to run on (CUDA when present, unless told otherwise), and with how many CPU
threads."""

from __future__ import annotations

import os

import torch

from attnkit.errors import AttnkitError


def resolve_device(name: str = "auto") -> torch.device:
    """``auto`` -> CUDA when available, else CPU; ``cuda`` without a GPU is a user error."""
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if name == "cuda" and not torch.cuda.is_available():
        raise AttnkitError(
            "device 'cuda' was asked for but torch sees no CUDA device (use auto or cpu)"
        )
    try:
        return torch.device(name)
    except RuntimeError:
        raise AttnkitError(f"unknown device {name!r} (use auto, cpu or cuda)") from None


# Decoding is many small per-step matmuls (a batch of rows x a few hundred units): on the 2-core
# CPU a second thread saved 13% greedy and nothing with beam 5 when idle, and cost 32-39% while
# another job ran (2,000 translations with the demo model; docs/RESULTS.md, decoding threads).
DECODE_THREADS = 1


def set_threads(threads: int | None, option: str = "--threads") -> int:
    """Give torch ``threads`` intra-op CPU threads and return the number in use. None: leave an
    ``OMP_NUM_THREADS`` from the environment in force, else :data:`DECODE_THREADS`."""
    if threads is None:
        if os.environ.get("OMP_NUM_THREADS", "").strip():
            return torch.get_num_threads()
        threads = DECODE_THREADS
    if threads < 1:
        raise AttnkitError(f"{option} must be at least 1, got {threads}")
    torch.set_num_threads(threads)
    return threads
