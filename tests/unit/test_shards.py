"""Weights in shards: a checkpoint split by ``write_shards`` loads to the same tensors as the
single file it came from, and a crafted index (a path outside the checkpoint, a tensor in the
wrong shard or in two, a tensor in none, a FIFO for a shard) is one CheckpointError."""

from __future__ import annotations

import json
import os

import pytest
import torch
from torch import nn

from attnkit.checkpoint import write_checkpoint
from attnkit.checkpoint.half import stored_as_half, write_half
from attnkit.checkpoint.shards import (
    INDEX,
    WEIGHTS,
    is_sharded,
    read_index,
    read_weight_header,
    read_weights,
    stored_as_half_weights,
    weight_files,
    write_shards,
)
from attnkit.checkpoint.validate import build_checked
from attnkit.errors import CheckpointError


def _model(width: int = 16) -> nn.Module:
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(width, width), nn.ReLU(), nn.Linear(width, 3))


@pytest.fixture
def checkpoint(tmp_path):
    model = _model()
    directory = write_checkpoint(tmp_path / "ckpt", "test", model.state_dict(), {"data": {}})
    return directory, model


def test_shards_hold_every_tensor_once_each_under_the_byte_bound(checkpoint):
    directory, model = checkpoint
    single = {k: v.clone() for k, v in read_weights(directory).items()}
    shards = write_shards(directory, max_bytes=600)  # 16x16 float32 = 1,024 bytes: its own shard
    assert len(shards) >= 3 and not (directory / WEIGHTS).exists() and is_sharded(directory)
    assert [p.name for p in shards] == [p.name for p in weight_files(directory)]
    for path in shards:
        held = read_weights_of(path)
        assert len(held) == 1 or sum(t.numel() * t.element_size() for t in held.values()) <= 600
    loaded = read_weights(directory)
    assert loaded.keys() == single.keys()
    for name, tensor in single.items():
        assert torch.equal(loaded[name], tensor)
    header = read_weight_header(directory)
    assert {k: v[0] for k, v in header.items()} == {k: tuple(v.shape) for k, v in single.items()}


def read_weights_of(path):
    from safetensors.torch import load_file

    return load_file(str(path))


def test_a_sharded_float16_checkpoint_builds_the_model_it_was_split_from(checkpoint):
    directory, model = checkpoint
    write_half(directory)
    write_shards(directory, max_bytes=300)
    assert all(stored_as_half(p) for p in weight_files(directory))
    assert stored_as_half_weights(directory)
    built = build_checked(directory, _model)
    x = torch.randn(4, 16)
    assert {p.dtype for p in built.parameters()} == {torch.float32}
    torch.testing.assert_close(built(x), model(x), atol=1e-2, rtol=1e-2)  # float16 rounding


def test_a_sharded_checkpoint_of_another_shape_is_refused_before_building(checkpoint):
    directory, _ = checkpoint
    write_shards(directory, max_bytes=300)
    with pytest.raises(CheckpointError, match=r"has shape \(16, 16\).*expects \(32, 32\)"):
        build_checked(directory, lambda: _model(32))


def _crafted(directory, change) -> None:
    index = json.loads((directory / INDEX).read_text())
    change(index["weight_map"])
    (directory / INDEX).write_text(json.dumps(index))


@pytest.mark.parametrize(
    "change, message",
    [
        (lambda m: m.update({"0.weight": "../../etc/passwd"}), "not a numbered"),
        (lambda m: m.update({"0.weight": "/tmp/model-00001-of-00001.safetensors"}), "numbered"),
        (lambda m: m.update({"0.weight": 7}), "not a numbered"),
        (lambda m: m.update({"2.bias": m["0.bias"]}), "which .* places in"),
        (lambda m: m.update({"ghost": m["0.bias"]}), "'ghost' is in no shard"),
        (lambda m: m.pop("2.bias"), "places nowhere"),  # 2.weight keeps its shard named
        (lambda m: m.clear(), "no weight_map"),
    ],
)
def test_a_crafted_index_is_one_line_naming_the_file(checkpoint, change, message):
    directory, _ = checkpoint
    write_shards(directory, max_bytes=300)
    _crafted(directory, change)
    for read in (read_weights, read_weight_header):
        with pytest.raises(CheckpointError, match=message) as error:
            read(directory)
        assert "\n" not in str(error.value) and str(directory) in str(error.value)


def _renamed_shards(directory, name) -> None:
    """The shards of ``directory`` renamed ``name.format(i)``, and its index to match."""
    index = json.loads((directory / INDEX).read_text())
    new = {
        shard: name.format(i) for i, shard in enumerate(sorted(set(index["weight_map"].values())))
    }
    for old, renamed in new.items():
        (directory / old).rename(directory / renamed)
    index["weight_map"] = {k: new[v] for k, v in index["weight_map"].items()}
    (directory / INDEX).write_text(json.dumps(index))


def test_any_name_accepts_shards_named_as_hugging_face_repositories_name_them(checkpoint):
    directory, _ = checkpoint
    write_shards(directory, max_bytes=300)
    _renamed_shards(directory, "weights part {}.safetensors")
    weight_map, splits = read_index(directory, any_name=True)
    assert sorted(set(weight_map.values()))[0] == "weights part 0.safetensors"
    assert splits["0.weight"] == [f"0.weight#part{i}" for i in range(4)]
    with pytest.raises(CheckpointError, match="'weights part .*', not a numbered"):
        read_index(directory)  # attnkit's own checkpoints: numbered names only


@pytest.mark.parametrize(
    "shard",
    ["../../etc/passwd", "/tmp/a.safetensors", "sub/a.safetensors", "..", ".", "", "a\0b", 7],
)
def test_any_name_still_refuses_a_shard_that_is_not_a_plain_file_beside_the_index(
    checkpoint, shard
):
    directory, _ = checkpoint
    write_shards(directory, max_bytes=300)
    _crafted(directory, lambda m: m.update({"0.bias": shard}))
    with pytest.raises(CheckpointError, match=r"names shard .*, not a file beside the index"):
        read_index(directory, any_name=True)


def test_any_name_keeps_the_bound_on_shards(checkpoint):
    directory, _ = checkpoint
    write_shards(directory, max_bytes=300)
    _crafted(directory, lambda m: m.update({f"t{i}": f"w{i}.safetensors" for i in range(2000)}))
    with pytest.raises(CheckpointError, match=r"2,0\d\d shards, above 1,000"):
        read_index(directory, any_name=True)


def test_a_tensor_in_two_shards_is_refused(checkpoint):
    from safetensors.torch import save_file

    directory, _ = checkpoint
    shards = write_shards(directory, max_bytes=300)
    first = read_weights_of(shards[0])
    second = read_weights_of(shards[1])
    save_file({**second, **first}, str(shards[1]))  # the first shard's tensors repeated
    with pytest.raises(CheckpointError, match="stands in two shards|places in"):
        read_weights(directory)


def test_a_fifo_in_place_of_a_shard_is_refused_without_blocking(checkpoint):
    directory, _ = checkpoint
    shards = write_shards(directory, max_bytes=300)
    shards[1].unlink()
    os.mkfifo(shards[1])
    with pytest.raises(CheckpointError, match="not a regular file"):
        read_weights(directory)
    with pytest.raises(CheckpointError, match="not a regular file"):
        read_weight_header(directory)


def test_an_index_naming_too_many_shards_is_refused(checkpoint):
    directory, _ = checkpoint
    write_shards(directory, max_bytes=300)
    _crafted(
        directory,
        lambda m: m.update({f"t{i}": f"model-{i:05d}-of-02000.safetensors" for i in range(2000)}),
    )
    with pytest.raises(CheckpointError, match=r"2,0\d\d shards"):
        read_weights(directory)


def test_a_tensor_larger_than_a_shard_is_stored_in_row_blocks_and_put_back(checkpoint):
    directory, _ = checkpoint
    single = {k: v.clone() for k, v in read_weights(directory).items()}
    shards = write_shards(directory, max_bytes=300)  # 0.weight: 1,024 bytes, 4 blocks of 4 rows
    assert max(p.stat().st_size for p in shards) < 300 + 1000  # data plus a small header
    index = json.loads((directory / INDEX).read_text())
    assert index["split_tensors"]["0.weight"] == [f"0.weight#part{i}" for i in range(4)]
    assert "0.weight" not in index["weight_map"]
    loaded = read_weights(directory)
    assert loaded.keys() == single.keys()
    assert all(torch.equal(loaded[k], v) for k, v in single.items())
    assert read_weight_header(directory)["0.weight"] == ((16, 16), "F32")


@pytest.mark.parametrize(
    "change, message",
    [
        (lambda s: s.update({"0.weight": ["0.weight#part0", "0.weight#part0"]}), "another"),
        (lambda s: s.update({"0.weight": ["ghost"]}), "does not hold"),
        (lambda s: s.update({"0.weight": []}), "no block list"),
        (lambda s: s.update({"ghost": ["0.weight#part3"]}), "another tensor uses"),
        (lambda s: s.update({"0.bias": s.pop("0.weight")}), "stored whole and split"),
    ],
)
def test_a_crafted_split_is_one_line(checkpoint, change, message):
    directory, _ = checkpoint
    write_shards(directory, max_bytes=300)
    index = json.loads((directory / INDEX).read_text())
    change(index["split_tensors"])
    (directory / INDEX).write_text(json.dumps(index))
    with pytest.raises(CheckpointError, match=message):
        read_weights(directory)


def test_blocks_that_do_not_fit_together_are_refused(checkpoint):
    from safetensors.torch import save_file

    directory, _ = checkpoint
    write_shards(directory, max_bytes=300)
    index = json.loads((directory / INDEX).read_text())
    shard = directory / index["weight_map"]["0.weight#part1"]
    save_file({"0.weight#part1": torch.zeros(4, 5)}, str(shard))  # 5 columns against 16
    with pytest.raises(CheckpointError, match="blocks of '0.weight' do not fit"):
        read_weights(directory)
