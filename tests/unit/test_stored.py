"""A graph checkpoint carries its graph: written at save time, read back checked, and loading
follows no path, directory or download flag of the checkpoint's config."""

from __future__ import annotations

import pytest
import torch
from safetensors.torch import load_file, save_file

from attnkit import checkpoint as ckpt
from attnkit.data.graph.lookup import dictionary_lookup
from attnkit.errors import CheckpointError, DataError
from attnkit.families.graph.bundle import build_model, load_graph_model
from attnkit.families.graph.config import parse_config
from attnkit.families.graph.stored import TENSORS, read_graph, write_graph


def _same(a, b) -> None:
    assert torch.equal(a.x, b.x) and torch.equal(a.y, b.y)
    assert torch.equal(a.edge_index, b.edge_index)
    assert a.masks.keys() == b.masks.keys() and all(
        torch.equal(a.masks[k], b.masks[k]) for k in a.masks
    )
    assert a.extra.keys() == b.extra.keys() and (a.name, a.classes, a.nodes) == (
        b.name,
        b.classes,
        b.nodes,
    )


@pytest.mark.parametrize("dense", [False, True])
def test_a_graph_round_trips_sparse_or_dense(tmp_path, dense):
    graph = dictionary_lookup(6, 4, seed=1)  # 12 features, 1-2 non-zero: stored sparse
    if dense:
        graph.x = torch.rand(graph.x.shape) + 0.5
    write_graph(tmp_path, graph)
    assert ("x" in load_file(tmp_path / TENSORS)) == dense
    _same(read_graph(tmp_path), graph)


@pytest.mark.parametrize(
    "change, says",
    [
        ({"edge_index": torch.tensor([[0], [10**6]])}, "an edge to a node outside"),
        ({"x.shape": torch.tensor([700_000, 1_433])}, "features of 700,000 x 1,433, above"),
        ({"y": torch.full((2,), 99)}, "y must be (N,) int64"),
        ({"mask.train": torch.zeros(3, dtype=torch.bool)}, "mask.train"[5:]),
    ],
)
def test_a_crafted_stored_graph_is_one_error(tmp_path, change, says):
    write_graph(tmp_path, dictionary_lookup(6, 1))  # features stored sparse
    tensors = {**load_file(tmp_path / TENSORS), **change}
    save_file(tensors, tmp_path / TENSORS)
    with pytest.raises(CheckpointError) as caught:
        read_graph(tmp_path)
    assert str(caught.value).startswith(str(tmp_path / TENSORS)) and says in str(caught.value)


def _checkpoint(directory, with_graph: bool):
    """A graph checkpoint whose config names Cora in a directory of its choosing, download on."""
    cfg = parse_config({"family": "graph", "data": {"name": "dictionary_lookup", "k": 2}}, "c")
    graph = dictionary_lookup(2, cfg.data.graphs, cfg.data.seed)
    model = build_model(cfg, graph)
    config = cfg.to_dict()
    config["data"].update(name="cora", directory=str(directory / "chosen"), download=True)
    extra = (lambda tmp: write_graph(tmp, graph)) if with_graph else None
    ckpt.write_checkpoint(directory / "ck", "graph", model.state_dict(), config, extra=extra)
    return graph


def test_loading_never_follows_the_configs_data_paths_nor_downloads(tmp_path, monkeypatch):
    import attnkit.data.download as download

    def refuse(*args, **kwargs):
        raise AssertionError("a checkpoint's load downloaded")

    monkeypatch.setattr(download, "download_file", refuse)
    graph = _checkpoint(tmp_path, with_graph=True)
    _, loaded, _ = load_graph_model(tmp_path / "ck")
    _same(loaded, graph)
    assert not (tmp_path / "chosen").exists()


def test_an_older_checkpoint_is_rebuilt_with_downloading_forced_off(tmp_path, monkeypatch):
    import attnkit.data.download as download

    def refuse(*args, **kwargs):
        raise AssertionError("a checkpoint's load downloaded")

    monkeypatch.setattr(download, "download_file", refuse)
    _checkpoint(tmp_path, with_graph=False)
    with pytest.raises(DataError, match="missing"):
        load_graph_model(tmp_path / "ck")
    assert not (tmp_path / "chosen").exists()
