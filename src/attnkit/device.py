"""Which torch device to run on: CUDA when present, unless told otherwise."""

from __future__ import annotations

import torch

from attnkit.errors import AttnkitError


def resolve_device(name: str = "auto") -> torch.device:
    """``auto`` -> CUDA when available, else CPU; ``cuda`` without a GPU is a user error."""
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if name == "cuda" and not torch.cuda.is_available():
        raise AttnkitError("device 'cuda' was asked for but torch sees no CUDA device (use auto or cpu)")
    try:
        return torch.device(name)
    except RuntimeError:
        raise AttnkitError(f"unknown device {name!r} (use auto, cpu or cuda)") from None
