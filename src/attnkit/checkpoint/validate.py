"""A checkpoint is checked before anything of its size is allocated.

A shared checkpoint is untrusted input: its ``config.yaml`` says how large a model to build, and
building it first and comparing shapes after would let ``ff_dim: 4000000000`` allocate until the
machine runs out of memory. Loading therefore goes in three steps, each bounded:

1. :func:`check_sizes` (run by :func:`attnkit.checkpoint.read_config` on every checkpoint config):
   every integer of the size-bearing sections is at most its cap (:data:`CAPS`: layers, heads,
   widths, beams...), far above any real model; one line names the key, its value and the cap.
2. :func:`build_checked` builds the model on the ``meta`` device (shapes, no memory) and compares
   every tensor with the safetensors header (names, shapes, dtypes; read without the data).
3. Only a model whose every tensor matches the file is built for real and loaded, so what it
   allocates is what the file holds.

Every family's loader goes through :func:`build_checked` (each family's bundle, and any family
registered later: a test iterates the registries).
"""

from __future__ import annotations

import json
import struct
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch
from torch import nn

from attnkit.checkpoint import check_regular
from attnkit.checkpoint.shards import (
    INDEX,
    WEIGHTS,
    is_sharded,
    read_weight_header,
    stored_as_half_weights,
)
from attnkit.checkpoint.weights import load_model_state
from attnkit.errors import CheckpointError
from attnkit.size_caps import (  # noqa: F401 (the caps are part of this module's checks)
    CAPS,
    SIZED_SECTIONS,
    WIDTH_CAP,
    cap_of,
    check_sizes,
)

#: the most bytes of a safetensors header read (the format itself allows 100 MB)
MAX_HEADER_BYTES = 100 * 1024 * 1024
#: a checkpoint's vocabulary may hold at most this many entries
MAX_VOCAB = 2_000_000

#: safetensors' dtype names -> torch's
DTYPES = {
    "F64": torch.float64,
    "F32": torch.float32,
    "F16": torch.float16,
    "BF16": torch.bfloat16,
    "I64": torch.int64,
    "I32": torch.int32,
    "I16": torch.int16,
    "I8": torch.int8,
    "U8": torch.uint8,
    "BOOL": torch.bool,
}


def read_header(path: str | Path) -> dict[str, tuple[tuple[int, ...], str]]:
    """{tensor name: (shape, safetensors dtype)} from a safetensors file's header, without its
    data; CheckpointError naming the file when the header is missing, too large or malformed."""
    path = Path(path)
    check_regular(path)
    try:
        with open(path, "rb") as f:
            size_bytes = f.read(8)
            if len(size_bytes) < 8:
                raise CheckpointError(f"{path}: corrupt safetensors file (no header)")
            (size,) = struct.unpack("<Q", size_bytes)
            if size > MAX_HEADER_BYTES:
                raise CheckpointError(
                    f"{path}: corrupt safetensors file (a header of {size:,} bytes, "
                    f"above {MAX_HEADER_BYTES:,})"
                )
            raw = f.read(size)
    except FileNotFoundError:
        raise CheckpointError(f"{path}: missing from the checkpoint") from None
    except OSError as exc:
        raise CheckpointError(f"{path}: unreadable ({exc.strerror or exc})") from None
    try:
        header = json.loads(raw.decode("utf-8"))
        return {
            name: (tuple(int(n) for n in entry["shape"]), str(entry["dtype"]))
            for name, entry in header.items()
            if name != "__metadata__"
        }
    except (UnicodeDecodeError, ValueError, TypeError, KeyError, AttributeError):
        raise CheckpointError(f"{path}: corrupt safetensors file (unreadable header)") from None


def compare_with_header(own: dict[str, Any], header: dict, path: Path, half: bool = False) -> None:
    """CheckpointError unless ``header`` has exactly the tensors of ``own`` (a state dict, on any
    device), each of the same shape and dtype. ``half``: the file stores float32 weights as
    float16 (:func:`attnkit.checkpoint.half.write_half`), so F16 stands for float32 too."""
    missing = sorted(set(own) - set(header))
    unexpected = sorted(set(header) - set(own))
    if missing or unexpected:
        detail = []
        for what, names in (("missing", missing), ("unexpected", unexpected)):
            if names:
                detail.append(f"{what} {', '.join(names[:3])}{' ...' if len(names) > 3 else ''}")
        raise CheckpointError(f"{path}: parameters do not match this model ({'; '.join(detail)})")
    for key, tensor in own.items():
        shape, dtype = header[key]
        if shape != tuple(tensor.shape):
            raise CheckpointError(
                f"{path}: {key} has shape {shape}, the model its config describes expects "
                f"{tuple(tensor.shape)}"
            )
        saved = DTYPES.get(dtype)
        if half and saved == torch.float16 and tensor.dtype == torch.float32:
            continue
        if saved != tensor.dtype:
            saved = str(DTYPES[dtype]).removeprefix("torch.") if dtype in DTYPES else dtype[:20]
            expected = str(tensor.dtype).removeprefix("torch.")
            raise CheckpointError(f"{path}: {key} has dtype {saved}, the model expects {expected}")


def build_checked(directory: str | Path, build: Callable[[], nn.Module]) -> nn.Module:
    """The model ``build()`` makes, with ``directory/model.safetensors`` (or its shards)
    loaded into it; built first on the ``meta`` device and compared with the file's header, so
    a config that does not describe the file's tensors is refused before any memory is
    allocated for them."""
    path = Path(directory) / (INDEX if is_sharded(directory) else WEIGHTS)
    header = read_weight_header(directory)
    with torch.device("meta"):
        skeleton = build()
    compare_with_header(skeleton.state_dict(), header, path, stored_as_half_weights(directory))
    del skeleton
    model = build()
    load_model_state(model, directory)
    return model
