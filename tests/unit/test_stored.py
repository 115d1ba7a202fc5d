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


def _binary_rows(nodes: int, seed: int = 0) -> torch.Tensor:
    """(nodes, 50) row-normalised binary features, as Planetoid's are once normalised."""
    g = torch.Generator().manual_seed(seed)
    x = (torch.rand(nodes, 50, generator=g) < 0.05).float()
    x[3] = 0  # a node with no features
    return x / x.sum(1, keepdim=True).clamp(min=1)


@pytest.mark.parametrize("alike", [True, False])
def test_sparse_features_are_stored_as_rows_one_value_a_row_where_alike(tmp_path, alike):
    graph = dictionary_lookup(6, 4, seed=1)
    x = _binary_rows(graph.x.shape[0])
    graph.x = x if alike else x * torch.linspace(0.5, 1.5, 50)
    write_graph(tmp_path, graph)
    stored = load_file(tmp_path / TENSORS)
    assert stored["x.col"].dtype == torch.int16 and "x.index" not in stored
    assert ("x.row_value" in stored) == alike and ("x.value" in stored) != alike
    _same(read_graph(tmp_path), graph)


def test_a_checkpoint_with_features_as_coordinates_still_reads(tmp_path):
    graph = dictionary_lookup(6, 4, seed=1)
    write_graph(tmp_path, graph)
    tensors = {k: v for k, v in load_file(tmp_path / TENSORS).items() if not k.startswith("x.")}
    sparse = graph.x.to_sparse().coalesce()
    tensors.update({"x.index": sparse.indices(), "x.value": sparse.values()})
    tensors["x.shape"] = torch.tensor(list(graph.x.shape), dtype=torch.int64)
    save_file(tensors, tmp_path / TENSORS)
    _same(read_graph(tmp_path), graph)


@pytest.mark.parametrize(
    "change, says",
    [
        ({"x.rowptr": torch.tensor([0, 1])}, "x.rowptr must be (N + 1,) int64"),
        ({"x.col": torch.tensor([10**4], dtype=torch.int16)}, "x.rowptr must rise"),
        ({"x.col": torch.zeros(0, dtype=torch.float32)}, "x.col must be (K,) int16"),
        ({"x.row_value": torch.zeros(2)}, "x.row_value must be (N,) float32"),
    ],
)
def test_crafted_sparse_rows_are_one_error(tmp_path, change, says):
    write_graph(tmp_path, dictionary_lookup(6, 1))
    tensors = {**load_file(tmp_path / TENSORS), **change}
    save_file(tensors, tmp_path / TENSORS)
    with pytest.raises(CheckpointError) as caught:
        read_graph(tmp_path)
    assert says in str(caught.value)
