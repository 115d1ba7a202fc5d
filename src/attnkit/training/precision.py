"""Mixed precision of the training step (``train.precision``): fp32, bf16 or fp16.

``fp32`` computes in float32 (no autocast: the step is unchanged). ``bf16`` runs the forward
under :func:`torch.autocast` in bfloat16 on a CPU or a CUDA device that supports it; its range
is float32's, so it needs no loss scaling. ``fp16`` runs it in float16, on CUDA only, with a
:class:`torch.amp.GradScaler` scaling the loss so that small gradients do not underflow. The
weights, the optimizer and the checkpoints stay float32 either way: autocast only changes the
compute. Evaluation and decoding stay in float32.
"""

from __future__ import annotations

import contextlib

import torch

from attnkit.errors import ConfigError

PRECISIONS = ("fp32", "bf16", "fp16")
_DTYPES = {"bf16": torch.bfloat16, "fp16": torch.float16}


def check(precision: str, device: torch.device, where: str = "train.precision") -> None:
    """ConfigError (one line naming ``where``) where ``device`` cannot train in ``precision``."""
    if precision not in PRECISIONS:
        raise ConfigError(f"{where}: {precision!r} is not one of {', '.join(PRECISIONS)}")
    if precision == "fp16" and device.type != "cuda":
        raise ConfigError(
            f"{where}: fp16 needs CUDA (its loss scaling is CUDA's); on {device.type} use bf16"
        )
    if precision == "bf16" and device.type == "cuda" and not torch.cuda.is_bf16_supported():
        raise ConfigError(f"{where}: bf16: this CUDA device does not support bfloat16; use fp16")
    if precision == "bf16" and device.type not in ("cpu", "cuda"):
        raise ConfigError(f"{where}: bf16 is supported on cpu and cuda, not {device.type}")


def autocast(precision: str, device: torch.device):
    """A context for the forward pass: autocast in ``precision``, or nothing for fp32."""
    if precision == "fp32":
        return contextlib.nullcontext()
    return torch.autocast(device.type, dtype=_DTYPES[precision])


def scaler(precision: str, device: torch.device) -> torch.amp.GradScaler | None:
    """The loss scaler fp16 needs; None for fp32 and bf16."""
    return torch.amp.GradScaler(device.type) if precision == "fp16" else None
