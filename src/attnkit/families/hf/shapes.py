"""A local Hugging Face model's ``config.json`` compared with its weights before the model is
built: the shapes in the safetensors headers (``model.safetensors``, or the shards that
``model.safetensors.index.json`` names; read without the tensors) against those of the model the
config describes, built on the ``meta`` device (no memory for its tensors).

A config whose ``hidden_size``, vocabulary or number of layers disagrees with the weights is one
CheckpointError naming the tensor and both shapes (or the layer tensor one side lacks), before
``from_pretrained`` allocates the model the config asks for. Tensors that legitimately differ
(a task head or buffer the file lacks, a tied output matrix, a name transformers renames as it
loads) are left to transformers: a tensor of both sides is compared, and the number of layers
of each stack of numbered layers (``encoder.layer.N``) both sides have.
"""

from __future__ import annotations

import copy
import re
from pathlib import Path

import torch

from attnkit.checkpoint.shards import WEIGHTS, is_sharded, read_index
from attnkit.checkpoint.validate import read_header
from attnkit.errors import CheckpointError

#: a name inside a numbered layer (``encoder.layer.3.``, ``h.0.``, ``block.11.``): stack, number
_LAYER = re.compile(r"^(.*?)\.(\d+)\.")
#: the old LayerNorm names transformers reads as weight and bias
_RENAMED = ((".gamma", ".weight"), (".beta", ".bias"))


def stored_shapes(files: Path) -> dict[str, tuple[tuple[int, ...], str]]:
    """{tensor name: (shape, file name)} of the model's safetensors weights in ``files``; empty
    where it has none (a ``.bin`` model, left to transformers). Shards are read as the index
    names them, any plain file name beside it (Hugging Face repositories choose their own)."""
    single = files / WEIGHTS
    if single.exists():
        return {k: (shape, WEIGHTS) for k, (shape, _) in read_header(single).items()}
    if not is_sharded(files):
        return {}
    shapes = {}
    for shard in sorted(set(read_index(files, any_name=True)[0].values())):
        shapes.update({k: (s, shard) for k, (s, _) in read_header(files / shard).items()})
    return shapes


def _own_name(name: str, expected: dict, prefix: str) -> str | None:
    """The model's name for the file's tensor ``name`` (the base model's prefix added or
    dropped, old LayerNorm names read as transformers reads them), or None."""
    for old, new in _RENAMED:
        if name.endswith(old):
            name = name[: -len(old)] + new
    candidates = [name, f"{prefix}.{name}"]
    if prefix and name.startswith(prefix + "."):
        candidates.append(name[len(prefix) + 1 :])
    return next((c for c in candidates if c in expected), None)


def _shape(shape) -> str:
    return "(" + ", ".join(str(n) for n in shape) + ")"


def _layers(names, prefix: str) -> dict[str, dict[int, str]]:
    """{stack: {layer number: its first tensor name}} of the numbered layers among ``names``
    (``encoder.layer``, ``h``, ``decoder.block``), the base model's prefix dropped."""
    stacks: dict[str, dict[int, str]] = {}
    for name in names:
        found = _LAYER.match(name)
        if found:
            stack = found.group(1).removeprefix(prefix + ".") if prefix else found.group(1)
            stacks.setdefault(stack, {}).setdefault(int(found.group(2)), name)
    return stacks


def _compare_layers(stored: dict, expected: dict, prefix: str, label: str) -> None:
    """CheckpointError where a stack of layers both sides have holds more layers on one side
    (names inside a layer may differ: transformers renames some as it loads)."""
    ours = _layers(expected, prefix)
    for stack, held in _layers(stored, prefix).items():
        wanted = ours.get(stack)
        if not wanted or set(held) == set(wanted):
            continue
        extra = sorted(set(held) - set(wanted))
        if extra:
            name = held[extra[0]]
            raise CheckpointError(
                f"{label}: {stored[name][1]}: {name} {_shape(stored[name][0])} is in the weights "
                f"but its config.json describes {len(wanted)} layers of {stack}"
            )
        name = wanted[min(set(wanted) - set(held))]
        raise CheckpointError(
            f"{label}: {name} {_shape(expected[name])} of the model its config.json describes is "
            f"not in the weights, which hold {len(held)} layers of {stack}"
        )


def check_shapes(cls: type, config, files: Path | None, label: str) -> None:
    """CheckpointError (one line) where the weights in ``files`` do not fit the model of class
    ``cls`` that ``config`` describes; nothing for a model not on disk yet (``files`` None) or
    without safetensors weights."""
    if files is None:
        return
    stored = stored_shapes(files)
    if not stored:
        return
    try:
        with torch.device("meta"):  # shapes only: no memory for the tensors
            skeleton = cls(copy.deepcopy(config))
    except (ValueError, AssertionError, TypeError, RuntimeError, IndexError, KeyError) as exc:
        # a value the model refuses (a padding id outside the vocabulary, ...)
        lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
        why = lines[0] if lines else type(exc).__name__
        raise CheckpointError(f"{label}: its config.json describes no model: {why}") from None
    expected = {k: tuple(v.shape) for k, v in skeleton.state_dict().items()}
    prefix = getattr(skeleton, "base_model_prefix", "") or ""
    del skeleton
    _compare_layers(stored, expected, prefix, label)
    for name, (shape, file) in stored.items():
        own = _own_name(name, expected, prefix)
        if own is not None and tuple(shape) != expected[own]:
            raise CheckpointError(
                f"{label}: {file}: {name} has shape {_shape(shape)} in the weights, "
                f"{_shape(expected[own])} in the model its config.json describes"
            )
