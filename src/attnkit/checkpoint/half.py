"""Float32 weights stored as float16: half the bytes of a checkpoint (the model zoo's).

:func:`write_half` rewrites a checkpoint's ``model.safetensors`` with its float32 tensors as
float16 and the metadata ``stored_as: float16``;
:func:`attnkit.checkpoint.weights.load_model_state` and
:func:`attnkit.checkpoint.validate.build_checked` accept such a file's float16 tensors where the
model holds float32 ones and upcast them (:func:`upcast_half`). A float16 tensor in a file
without that mark is refused as any other dtype mismatch is.
"""

from __future__ import annotations

import os
from pathlib import Path

import torch
from safetensors import SafetensorError, safe_open
from safetensors.torch import save_file

from attnkit.checkpoint import FORMAT, check_finite, open_temp_file, read_tensors

#: ``model.safetensors`` metadata of a checkpoint whose float32 weights are stored as float16
HALF_METADATA = {"format": FORMAT, "stored_as": "float16"}


def stored_as_half(path: str | Path) -> bool:
    """Whether the safetensors file ``path`` says its float weights are float32 ones stored as
    float16 (:func:`write_half`); False for a file that cannot be read (loading says why)."""
    if not Path(path).is_file():  # a FIFO would block safe_open's open()
        return False
    try:
        with safe_open(str(path), framework="pt") as f:
            metadata = f.metadata() or {}
    except (SafetensorError, OSError, ValueError):
        return False
    return metadata.get("stored_as") == HALF_METADATA["stored_as"]


def write_half(directory: str | Path) -> Path:
    """Store the float32 tensors of the checkpoint ``directory``'s ``model.safetensors`` as
    float16 (half the bytes), atomically, marked so loading upcasts them (:func:`upcast_half`).
    A weight float16 cannot hold (beyond +-65504) is a CheckpointError and the file stays."""
    path = Path(directory) / "model.safetensors"
    state = read_tensors(path)
    half = {k: v.half() if v.dtype == torch.float32 else v for k, v in state.items()}
    check_finite(half, f"{path}: not stored as float16")
    descriptor, tmp = open_temp_file(path.parent, f".{path.name}.tmp-")
    os.close(descriptor)
    try:
        save_file(half, str(tmp), metadata=HALF_METADATA)
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return path


def upcast_half(
    state: dict[str, torch.Tensor], own: dict[str, torch.Tensor]
) -> dict[str, torch.Tensor]:
    """``state`` with each float16 tensor the model holds in float32 cast to float32."""
    return {
        k: v.float()
        if v.dtype == torch.float16 and k in own and own[k].dtype == torch.float32
        else v
        for k, v in state.items()
    }
