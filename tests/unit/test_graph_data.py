"""Graph data: the Planetoid reader (its quirks, checksums, the pickles it refuses), your own
graph's TSV files (every bad input in one line naming file:line), DictionaryLookup, and the
neighbourhood of a node."""

from __future__ import annotations

import pickle
import shutil

import numpy as np
import pytest
import torch

from attnkit.config import from_dict
from attnkit.data.graph.edge_list import read_edge_list
from attnkit.data.graph.graph_data import neighbourhood, undirected
from attnkit.data.graph.planetoid import read_planetoid
from attnkit.data.graph.safe_pickle import SparseMatrix, load_pickle
from attnkit.data.graph.sources import GraphDataConfig, load_graph
from attnkit.errors import ConfigError, DataError

# ---- Planetoid ---------------------------------------------------------------------------------


def test_cora_reads_as_the_reference_loaders_give_it(shared_data):
    graph = read_planetoid(shared_data("planetoid"), "cora")
    assert (graph.num_nodes, graph.num_features, len(graph.classes)) == (2708, 1433, 7)
    assert graph.edge_index.shape == (2, 10556)  # PyG's Cora: 10,556 directed edges
    assert [int(graph.masks[s].sum()) for s in ("train", "dev", "test")] == [140, 500, 1000]
    train_labels = graph.y[graph.masks["train"]]
    assert torch.equal(train_labels.bincount(), torch.full((7,), 20))  # 20 per class
    assert not (graph.masks["train"] & graph.masks["test"]).any()
    src, dst = graph.edge_index
    assert not (src == dst).any()
    reverse = set(zip(dst.tolist(), src.tolist()))
    assert reverse == set(zip(src.tolist(), dst.tolist()))  # undirected


def _write_planetoid(directory, name, test_ids, n_first=4, width=3, classes=2):
    """A tiny Planetoid set in the format: dense arrays (a reader must take them too)."""
    rng = np.random.default_rng(0)
    allx = rng.random((n_first, width)).astype(np.float32)
    ally = np.eye(classes)[np.arange(n_first) % classes]
    tx = np.arange(len(test_ids) * width, dtype=np.float32).reshape(-1, width) + 100
    ty = np.eye(classes)[np.arange(len(test_ids)) % classes]
    parts = {"x": allx[:2], "y": ally[:2], "allx": allx, "ally": ally, "tx": tx, "ty": ty}
    top = max(test_ids) + 1
    parts["graph"] = {i: [(i + 1) % top] for i in range(top)}
    for part, value in parts.items():
        (directory / f"ind.{name}.{part}").write_bytes(pickle.dumps(value, protocol=4))
    (directory / f"ind.{name}.test.index").write_text("\n".join(map(str, test_ids)) + "\n")
    return tx


def test_unordered_test_ids_get_their_rows_and_missing_ids_stay_empty(tmp_path):
    # ids 4..8 of which 6 is in no file (Citeseer's isolated nodes), listed out of order
    test_ids = [7, 4, 8, 5]
    tx = _write_planetoid(tmp_path, "toy", test_ids)
    graph = read_planetoid(tmp_path, "toy")
    assert graph.num_nodes == 9
    for row, node in enumerate(test_ids):
        assert torch.equal(graph.x[node], torch.from_numpy(tx[row]))
    assert torch.equal(graph.x[6], torch.zeros(3)) and int(graph.y[6]) == -1
    assert graph.masks["test"].nonzero().flatten().tolist() == [4, 5, 7, 8]
    assert int(graph.y[7]) == 0 and int(graph.y[4]) == 1  # ty rows follow test.index's order


def test_checksum_mismatch_is_one_line_naming_the_file(tmp_path, shared_data):
    source = shared_data("planetoid")
    for path in source.glob("ind.cora.*"):
        shutil.copy(path, tmp_path / path.name)
    (tmp_path / "ind.cora.y").chmod(0o644)
    with open(tmp_path / "ind.cora.y", "ab") as out:
        out.write(b"\0")
    with pytest.raises(DataError, match=r"ind\.cora\.y: sha256 checksum mismatch"):
        read_planetoid(tmp_path, "cora")


def test_a_missing_file_says_where_and_how_to_get_it(tmp_path):
    with pytest.raises(DataError, match=r"missing data file 'ind\.cora\.x'.*data\.download"):
        read_planetoid(tmp_path, "cora", download=False)


class _Runs:
    """A pickle that would call ``os.system`` if it were unpickled by pickle.load."""

    def __reduce__(self):
        import os

        return (os.system, ("touch SHOULD_NOT_EXIST",))


def test_a_pickle_asking_for_a_class_outside_the_allow_list_is_refused_unrun(tmp_path):
    path = tmp_path / "ind.evil.x"
    path.write_bytes(pickle.dumps(_Runs(), protocol=2))
    with pytest.raises(
        DataError, match=r"ind\.evil\.x: not read: refused global (posix|os)\.system"
    ):
        load_pickle(path)
    assert not (tmp_path / "SHOULD_NOT_EXIST").exists()
    assert not __import__("pathlib").Path("SHOULD_NOT_EXIST").exists()


def test_allowed_pickles_read_arrays_dicts_and_sparse_matrices(tmp_path):
    path = tmp_path / "ok"
    from collections import defaultdict

    adjacency = defaultdict(list, {0: [1, 2]})
    path.write_bytes(pickle.dumps({"a": np.arange(3), "g": adjacency}, protocol=4))
    loaded = load_pickle(path)
    assert loaded["a"].tolist() == [0, 1, 2] and loaded["g"][0] == [1, 2]
    sparse = SparseMatrix()
    sparse.__setstate__(
        {
            "format": "csr",
            "_shape": (2, 3),
            "data": np.array([1.0, 2.0]),
            "indices": np.array([2, 0]),
            "indptr": np.array([0, 1, 2]),
        }
    )
    assert sparse.toarray().tolist() == [[0, 0, 1], [2, 0, 0]]


# ---- your own graph ----------------------------------------------------------------------------


def _own(tmp_path, nodes: str, edges: str):
    (tmp_path / "nodes.tsv").write_text(nodes)
    (tmp_path / "edges.tsv").write_text(edges)
    return tmp_path / "nodes.tsv", tmp_path / "edges.tsv"


NODES = "# id\tlabel\tsplit\tfeatures\na\tml\ttrain\t1 0\nb\tdb\ttest\t0,1\nc\t-\t-\t1 1\n"


def test_own_graph_reads_nodes_edges_and_splits(tmp_path):
    graph = read_edge_list(*_own(tmp_path, NODES, "a\tb\n\n# c\nb\tc\n"))
    assert graph.classes == ["db", "ml"] and graph.y.tolist() == [1, 0, -1]
    assert graph.x.tolist() == [[1, 0], [0, 1], [1, 1]]
    assert sorted(map(tuple, graph.edge_index.T.tolist())) == [(0, 1), (1, 0), (1, 2), (2, 1)]
    assert graph.masks["train"].tolist() == [True, False, False]


@pytest.mark.parametrize(
    "nodes,edges,message",
    [
        (NODES, "a\tb\nb c\n", r"edges\.tsv:2: expected 'source<TAB>target'"),
        (NODES, "a\tb\na\tzz\n", r"edges\.tsv:2: node 'zz' is not in"),
        (NODES + "d\tml\ttrain\t1 2 3\n", "", r"nodes\.tsv:5: 3 features; the first node has 2"),
        ("a\tml\tvalid\t1\n", "", r"nodes\.tsv:1: split 'valid'"),
        ("a\tml\ttrain\n", "", r"nodes\.tsv:1: expected 4 tab-separated columns"),
        ("a\tml\ttrain\t1 x\n", "", r"nodes\.tsv:1: features must be numbers"),
        ("a\tml\ttrain\t1 0\nb\tml\ttest\t1 nan\n", "", r"nodes\.tsv:2: features must be finite"),
        ("a\tml\ttrain\t-inf 1\n", "", r"nodes\.tsv:1: features must be finite"),
        ("a\tml\ttrain\t1e39 1\n", "", r"nodes\.tsv:1: features must be finite"),
        ("a\tml\ttrain\t1\na\tml\ttest\t2\n", "", r"nodes\.tsv:2: node id 'a'"),
        ("a\t-\ttrain\t1\n", "", r"nodes\.tsv: node 'a' is in split train without a label"),
    ],
)
def test_own_graph_bad_input_is_one_line_naming_file_and_line(tmp_path, nodes, edges, message):
    with pytest.raises(DataError, match=message):
        read_edge_list(*_own(tmp_path, nodes, edges))


def test_edge_list_config_needs_its_files():
    with pytest.raises(ConfigError, match="needs data.nodes and data.edges"):
        from_dict(GraphDataConfig, {"name": "edge_list"}, "data")
    with pytest.raises(ConfigError, match="'karate' is not one of"):
        from_dict(GraphDataConfig, {"name": "karate"}, "data")


# ---- DictionaryLookup --------------------------------------------------------------------------


def test_dictionary_lookup_graphs_are_complete_bipartite_with_the_right_answers():
    k = 4
    graph = load_graph(GraphDataConfig(name="dictionary_lookup", k=k, graphs=10, normalize=False))
    assert graph.num_nodes == (10 + 2) * 2 * k
    assert [int(graph.masks[s].sum()) for s in ("train", "dev", "test")] == [40, 4, 4]
    src, dst = graph.edge_index
    query, part = graph.extra["query"], graph.extra["graph"]
    assert (~query[src]).all() and query[dst].all() and (part[src] == part[dst]).all()
    assert torch.equal(torch.bincount(dst, minlength=graph.num_nodes)[query], torch.full((48,), k))
    for q in torch.nonzero(query).flatten()[:8].tolist():  # the key with q's attribute holds y
        keys = src[dst == q]
        attribute = int(graph.x[q, :k].argmax())
        match = keys[graph.x[keys, :k].argmax(1) == attribute]
        assert len(match) == 1 and int(graph.x[match[0], k:].argmax()) == int(graph.y[q])
    assert (graph.y[~query] == -1).all()


def test_neighbourhood_takes_two_hops_towards_the_node():
    # a path 0 - 1 - 2 - 3 and a branch 1 - 4
    edges = undirected(np.array([0, 1, 2, 1]), np.array([1, 2, 3, 4]), 5)
    nodes, hops, positions = neighbourhood(edges, 0, 5, hops=2)
    assert nodes.tolist() == [0, 1, 2, 4] and hops.tolist() == [0, 1, 2, 2]
    kept = {tuple(edges[:, p].tolist()) for p in positions.tolist()}
    assert kept == {(1, 0), (2, 1), (4, 1)}


def test_a_data_set_without_recorded_checksums_is_never_downloaded(tmp_path):
    with pytest.raises(DataError, match=r"records no checksums for citeseer, so it does not"):
        read_planetoid(tmp_path, "citeseer", download=True)


# ---- Planetoid files that declare more than they hold ------------------------------------------
def _sparse_pickle(shape) -> bytes:
    """A pickled scipy CSR matrix (written by hand: scipy is not needed) declaring ``shape``
    with one entry."""
    state = {"format": "csr", "_shape": shape, "data": np.ones(1), "indices": np.zeros(1, int)}
    state["indptr"] = np.array([0, 1] + [1] * (min(shape[0], 3) - 1))
    body = pickle.dumps(state, protocol=3)[2:-1]  # the dict's opcodes, no header or STOP
    return b"\x80\x03cscipy.sparse._csr\ncsr_matrix\n)\x81" + body + b"b."


def _planetoid_with(tmp_path, part: str, value) -> None:
    _write_planetoid(tmp_path, "toy", [7, 4, 8, 5])
    data = value if isinstance(value, bytes) else pickle.dumps(value, protocol=4)
    if part == "test.index":
        data = value.encode()
    (tmp_path / f"ind.toy.{part}").write_bytes(data)


def _refused(tmp_path, says: str) -> str:
    import time

    start = time.monotonic()
    with pytest.raises(DataError) as caught:
        read_planetoid(tmp_path, "toy")
    assert time.monotonic() - start < 5
    message = str(caught.value)
    assert "\n" not in message and says in message, message
    return message


def test_a_hand_written_sparse_pickle_reads_as_its_matrix(tmp_path):
    path = tmp_path / "m"
    path.write_bytes(_sparse_pickle((2, 3)))
    assert load_pickle(path).toarray().tolist() == [[1, 0, 0], [0, 0, 0]]


def test_declared_sizes_are_checked_before_anything_is_allocated(tmp_path):
    # a 2 KB file declaring 700,000 x 1,433 (3.7 GiB dense): refused from its shape
    _planetoid_with(tmp_path, "allx", _sparse_pickle((700_000, 1_433)))
    message = _refused(tmp_path, "a 700,000 x 1,433 matrix is above the caps")
    assert message.startswith(str(tmp_path / "ind.toy.allx"))
    # shapes that disagree with each other: files of different data sets
    _planetoid_with(tmp_path, "tx", _sparse_pickle((3, 3)))
    _refused(tmp_path, "the files are of different data sets")
    _planetoid_with(tmp_path, "allx", np.zeros((4, 5), np.float32))
    _refused(tmp_path, "matrices of different data sets")
    # a test id near 10^12 asks for 10^12 rows; 10^12 itself has too many digits
    _planetoid_with(tmp_path, "test.index", "7\n4\n8\n999999999999\n")
    _refused(tmp_path, "test ids up to 999,999,999,999: 1,000,000,000,000 nodes, above the caps")
    _planetoid_with(tmp_path, "test.index", "7\n4\n8\n1000000000000\n")
    _refused(tmp_path, "test.index:4: expected a node id")
    # a list of lists is no matrix (np.asarray of shared rows would allocate their product)
    _planetoid_with(tmp_path, "tx", [[0.0] * 3] * 4)
    _refused(tmp_path, "expected a numpy array or a scipy sparse matrix, got list")


def test_a_graph_whose_keys_share_one_huge_list_is_refused_before_allocating(tmp_path, monkeypatch):
    from attnkit.data.graph import planetoid

    monkeypatch.setattr(planetoid, "MAX_EDGES", 5_000_000)  # the 9 toy nodes: a lower cap
    shared = [0] * 1_000_000  # pickled once, referenced by every key: 9 million entries
    _planetoid_with(tmp_path, "graph", {i: shared for i in range(9)})
    assert (tmp_path / "ind.toy.graph").stat().st_size < 3_000_000
    _refused(tmp_path, "ind.toy.graph: over 5,000,000 adjacency entries")


@pytest.mark.parametrize("value", ["a", 2**70, -1, 9, 1.5, True, "self"])
def test_graph_values_that_are_not_node_ids_are_one_error(tmp_path, value):
    if value == "self":
        value = []
        value.append(value)
    _planetoid_with(tmp_path, "graph", {0: [1, value], 1: [0]})
    _refused(tmp_path, "ind.toy.graph: node 0: neighbour ")


@pytest.mark.parametrize("key", ["a", 2**70, -3, (1,)])
def test_graph_keys_that_are_not_node_ids_are_one_error(tmp_path, key):
    _planetoid_with(tmp_path, "graph", {0: [1], key: [0]})
    _refused(tmp_path, "expected a node id (0..8) and a list of them")


@pytest.mark.parametrize("bad", ["²", "9" * 4400, "-4", "4.0"])
def test_test_ids_are_short_ascii_numbers(tmp_path, bad):
    _planetoid_with(tmp_path, "test.index", f"7\n4\n8\n{bad}\n")
    _refused(tmp_path, "ind.toy.test.index:4: expected a node id")


def test_a_fifo_in_place_of_a_planetoid_file_is_refused(tmp_path):
    import os

    for part in ("x", "test.index"):
        directory = tmp_path / part
        directory.mkdir()
        _write_planetoid(directory, "toy", [7, 4, 8, 5])
        (directory / f"ind.toy.{part}").unlink()
        os.mkfifo(directory / f"ind.toy.{part}")
        _refused(directory, f"ind.toy.{part}: is a FIFO, device or socket, not a regular file")
