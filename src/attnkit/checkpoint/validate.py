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

Every family's loader goes through :func:`build_checked` (the bundles of
:mod:`attnkit.checkpoint.seq2seq` and :mod:`attnkit.checkpoint.vision`, and any family registered
later: a test iterates the registries).
"""

from __future__ import annotations

import json
import re
import struct
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch
from torch import nn

from attnkit.checkpoint import load_model_state
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
)
#: any other integer (a width: embedding, hidden, feed-forward, attention, patch)
WIDTH_CAP = 65_536
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


def read_header(path: str | Path) -> dict[str, tuple[tuple[int, ...], str]]:
    """{tensor name: (shape, safetensors dtype)} from a safetensors file's header, without its
    data; CheckpointError naming the file when the header is missing, too large or malformed."""
    path = Path(path)
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


def compare_with_header(own: dict[str, Any], header: dict, path: Path) -> None:
    """CheckpointError unless ``header`` has exactly the tensors of ``own`` (a state dict, on any
    device), each of the same shape and dtype."""
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
        if DTYPES.get(dtype) != tensor.dtype:
            saved = str(DTYPES[dtype]).removeprefix("torch.") if dtype in DTYPES else dtype[:20]
            expected = str(tensor.dtype).removeprefix("torch.")
            raise CheckpointError(f"{path}: {key} has dtype {saved}, the model expects {expected}")


def build_checked(directory: str | Path, build: Callable[[], nn.Module]) -> nn.Module:
    """The model ``build()`` makes, with ``directory/model.safetensors`` loaded into it; built
    first on the ``meta`` device and compared with the file's header, so a config that does not
    describe the file's tensors is refused before any memory is allocated for them."""
    path = Path(directory) / "model.safetensors"
    header = read_header(path)
    with torch.device("meta"):
        skeleton = build()
    compare_with_header(skeleton.state_dict(), header, path)
    del skeleton
    model = build()
    load_model_state(model, directory)
    return model
