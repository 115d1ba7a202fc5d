"""A checkpoint's weights in one file or in shards: ``model.safetensors``, or numbered
``model-00001-of-00009.safetensors`` files named by ``model.safetensors.index.json``.

Shards are the layout Hugging Face uses for large models (the same index format: a
``weight_map`` from each tensor's name to the file that holds it). attnkit writes them for a
model that ships inside the package, where no single file may be large (the zoo's translator):
:func:`write_shards` splits a checkpoint's ``model.safetensors``; every loader reads either
layout through :func:`weight_files`, :func:`read_weights` and :func:`read_weight_header`.

A tensor larger than a shard (the translator's 7,574 x 256 embeddings) is stored in row blocks,
``NAME#part0``, ``NAME#part1``, ... (``#`` is in no PyTorch parameter name), listed in order
under the index's ``split_tensors``; reading puts the blocks back together along their first
dimension. Hugging Face's format has no such entry: it allows shards above any size bound.

An index is untrusted input like the rest of a checkpoint: its shard names must be plain
numbered files beside it (never a path elsewhere), each read as a regular file, every tensor
held by exactly the shard the map names, no shard may repeat a tensor, and a split tensor's
blocks must all be there, each used once, alike in dtype and in every dimension but the first.
A Hugging Face repository's index is read by the same :func:`read_index`, its shards allowed any
plain file name beside it (``any_name``): those repositories name their shards as they like.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import torch
from safetensors.torch import save_file

from attnkit import checkpoint as ckpt
from attnkit.errors import CheckpointError

WEIGHTS, INDEX = "model.safetensors", "model.safetensors.index.json"
#: the only shard names an index may give: ``model-00001-of-00009.safetensors``
SHARD_NAME = re.compile(r"^model-(\d{5})-of-(\d{5})\.safetensors$")
#: at most this many shards (a crafted index cannot make loading open thousands of files)
MAX_SHARDS = 1000
#: the zoo's bound: no file of a model shipped in the package above this many bytes
SHIPPED_FILE_BYTES = 1_900_000
#: how a block of a split tensor is named: ``NAME#partI``
PART = "#part"


def is_sharded(directory: str | Path) -> bool:
    """Whether the checkpoint ``directory`` keeps its weights in shards (an index and no
    ``model.safetensors``)."""
    directory = Path(directory)
    return not (directory / WEIGHTS).exists() and (directory / INDEX).exists()


def read_index(
    directory: str | Path, any_name: bool = False
) -> tuple[dict[str, str], dict[str, list[str]]]:
    """({stored tensor name: shard file name}, {split tensor: its blocks' stored names in
    order}) from ``directory``'s index, every name checked; a CheckpointError naming the index
    and the entry otherwise.

    Each shard must be a numbered ``model-NNNNN-of-NNNNN.safetensors`` file beside the index;
    with ``any_name``, any plain file name beside it (a Hugging Face repository's own names).
    """
    where = Path(directory) / INDEX
    index = ckpt.read_json(where)
    weight_map = index.get("weight_map") if isinstance(index, dict) else None
    if not isinstance(weight_map, dict) or not weight_map:
        raise CheckpointError(f"{where}: no weight_map of tensor names to shard files")
    shards = set()
    for name, shard in weight_map.items():
        if not _shard_name_allowed(shard, any_name):
            kind = "" if any_name else "numbered model-NNNNN-of-NNNNN.safetensors "
            raise CheckpointError(
                f"{where}: tensor {str(name)[:80]!r} names shard {str(shard)[:80]!r}, not a "
                f"{kind}file beside the index"
            )
        shards.add(shard)
    if len(shards) > MAX_SHARDS:
        raise CheckpointError(f"{where}: {len(shards):,} shards, above {MAX_SHARDS:,}")
    splits = index.get("split_tensors", {})
    used: set[str] = set()
    if not isinstance(splits, dict):
        raise CheckpointError(f"{where}: split_tensors is not a map of names to block lists")
    for name, parts in splits.items():
        if not isinstance(parts, list) or not parts or len(parts) > MAX_SHARDS:
            raise CheckpointError(f"{where}: split tensor {str(name)[:80]!r} has no block list")
        if name in weight_map:
            raise CheckpointError(f"{where}: tensor {name[:80]!r} is stored whole and split")
        for part in parts:
            if not isinstance(part, str) or part not in weight_map or part in used:
                raise CheckpointError(
                    f"{where}: split tensor {str(name)[:80]!r} names block {str(part)[:80]!r}, "
                    "which the weight_map does not hold or another tensor uses"
                )
            used.add(part)
    return weight_map, splits


def _shard_name_allowed(shard, any_name: bool) -> bool:
    """Whether ``shard`` names a file beside the index (numbered, unless ``any_name``)."""
    if not isinstance(shard, str):
        return False
    if any_name:  # one plain name: no folder, no "..", nothing open() refuses
        return Path(shard).name == shard and shard not in ("", "..") and "\0" not in shard
    return bool(SHARD_NAME.match(shard))


def weight_files(directory: str | Path) -> list[Path]:
    """The files that hold the checkpoint's weights: ``[model.safetensors]``, or its shards in
    order."""
    directory = Path(directory)
    if not is_sharded(directory):
        return [directory / WEIGHTS]
    return [directory / shard for shard in sorted(set(read_index(directory)[0].values()))]


def read_weight_header(directory: str | Path) -> dict[str, tuple[tuple[int, ...], str]]:
    """{tensor name: (shape, safetensors dtype)} of every weight, from the headers alone (no
    tensor data read), whichever layout; each tensor must sit in the shard the index names."""
    from attnkit.checkpoint.validate import read_header

    directory = Path(directory)
    if not is_sharded(directory):
        return read_header(directory / WEIGHTS)
    (weight_map, splits), header = read_index(directory), {}
    for path in weight_files(directory):
        for name, entry in read_header(path).items():
            _check_placed(directory, weight_map, name, path.name, header)
            header[name] = entry
    _check_complete(directory, weight_map, header)
    for name, parts in splits.items():
        blocks = [header.pop(part) for part in parts]
        shapes, dtypes = [shape for shape, _ in blocks], {dtype for _, dtype in blocks}
        if len(dtypes) > 1 or any(not s or s[1:] != shapes[0][1:] for s in shapes):
            raise CheckpointError(f"{directory / INDEX}: the blocks of {name[:80]!r} do not fit")
        header[name] = ((sum(s[0] for s in shapes), *shapes[0][1:]), dtypes.pop())
    return header


def stored_as_half_weights(directory: str | Path) -> bool:
    """Whether every weight file of ``directory`` is marked float16-stored
    (:func:`attnkit.checkpoint.half.write_half`)."""
    from attnkit.checkpoint.half import stored_as_half

    return all(stored_as_half(path) for path in weight_files(directory))


def read_weights(directory: str | Path) -> dict[str, torch.Tensor]:
    """Every weight tensor of the checkpoint ``directory``, whichever layout."""
    directory = Path(directory)
    if not is_sharded(directory):
        return ckpt.read_tensors(directory / WEIGHTS)
    read_weight_header(directory)  # every shard's header and every split checked first
    splits, state = read_index(directory)[1], {}
    for path in weight_files(directory):
        state.update(ckpt.read_tensors(path))
    for name, parts in splits.items():
        state[name] = torch.cat([state.pop(part) for part in parts])
    return state


def _check_placed(directory: Path, weight_map: dict, name: str, shard: str, seen: dict) -> None:
    if name in seen:
        raise CheckpointError(f"{directory / shard}: tensor {name[:80]!r} stands in two shards")
    if weight_map.get(name) != shard:
        raise CheckpointError(
            f"{directory / shard}: holds tensor {name[:80]!r}, which {INDEX} places "
            f"{'in ' + str(weight_map[name]) if name in weight_map else 'nowhere'}"
        )


def _check_complete(directory: Path, weight_map: dict, found: dict) -> None:
    missing = sorted(set(weight_map) - set(found))
    if missing:
        raise CheckpointError(
            f"{directory / INDEX}: tensor {missing[0][:80]!r} is in no shard "
            f"({len(missing)} missing)"
        )


def write_shards(directory: str | Path, max_bytes: int = SHIPPED_FILE_BYTES) -> list[Path]:
    """Split ``directory/model.safetensors`` into numbered shards of at most ``max_bytes`` of
    tensor data each (a larger tensor in row blocks, each its own shard), with the index, then
    remove the single file. Each shard keeps the file's metadata (a float16-stored checkpoint
    stays marked so). Every file is written to a temporary name and renamed into place, and the
    single file goes last, so an interruption leaves a loadable checkpoint."""
    from safetensors import safe_open

    directory = Path(directory)
    single = directory / WEIGHTS
    with safe_open(str(single), framework="pt") as f:
        metadata = f.metadata() or {}
    state = ckpt.read_tensors(single)
    stored, splits = _split_rows(state, max_bytes)
    groups: list[list[str]] = [[]]
    size = 0
    for name, tensor in stored.items():  # the file's order: a layer's tensors stay together
        nbytes = tensor.numel() * tensor.element_size()
        if groups[-1] and size + nbytes > max_bytes:
            groups.append([])
            size = 0
        groups[-1].append(name)
        size += nbytes
    names = [f"model-{i + 1:05d}-of-{len(groups):05d}.safetensors" for i in range(len(groups))]
    for shard, group in zip(names, groups):
        tensors = {k: stored[k].contiguous() for k in group}
        _write_atomic(directory / shard, lambda tmp, t=tensors: save_file(t, tmp, metadata))
    weight_map = {k: shard for shard, group in zip(names, groups) for k in group}
    index = {"metadata": {**metadata, "total_size": _total_bytes(state)}, "weight_map": weight_map}
    if splits:
        index["split_tensors"] = splits
    _write_atomic(directory / INDEX, lambda tmp: Path(tmp).write_text(json.dumps(index, indent=1)))
    single.unlink()
    return [directory / shard for shard in names]


def _split_rows(
    state: dict[str, torch.Tensor], max_bytes: int
) -> tuple[dict[str, torch.Tensor], dict[str, list[str]]]:
    """``state`` with each tensor above ``max_bytes`` cut into row blocks ``NAME#partI`` of at
    most that size, and {NAME: its blocks' names}."""
    stored, splits = {}, {}
    for name, tensor in state.items():
        nbytes = tensor.numel() * tensor.element_size()
        if nbytes <= max_bytes or tensor.dim() == 0 or tensor.shape[0] < 2:
            stored[name] = tensor
            continue
        rows = max(1, max_bytes * tensor.shape[0] // nbytes)
        blocks = torch.split(tensor, rows)
        splits[name] = [f"{name}{PART}{i}" for i in range(len(blocks))]
        stored.update(zip(splits[name], blocks))
    return stored, splits


def _total_bytes(state: dict[str, torch.Tensor]) -> int:
    return sum(t.numel() * t.element_size() for t in state.values())


def _write_atomic(path: Path, write) -> None:
    """``write(temporary path)``, then the temporary file renamed to ``path``."""
    descriptor, tmp = ckpt.open_temp_file(path.parent, f".{path.name}.tmp-")
    os.close(descriptor)
    try:
        write(str(tmp))
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
