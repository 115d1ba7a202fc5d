"""The Planetoid citation graphs (Yang, Cohen & Salakhutdinov 2016): Cora, Citeseer, Pubmed.

Eight files per data set, ``ind.<name>.{x,y,tx,ty,allx,ally,graph,test.index}``: Python 2
pickles of numpy arrays, scipy sparse matrices and a dict of adjacency lists, read by
:mod:`attnkit.data.graph.safe_pickle` (no code runs), and a text file of test node ids. The
format's quirks are handled as the reference loaders do (Kipf's ``gcn/utils.py``, PyTorch
Geometric's ``read_planetoid_data``):

- ``allx``/``ally`` hold the first nodes (training, validation and unlabelled ones); ``tx``/``ty``
  the test nodes, in the order of ``test.index``, which is not sorted: their rows are put at
  the ids ``test.index`` names.
- Citeseer's ``test.index`` skips ids of isolated nodes that are in no file: the test block is
  widened to the whole id range, the missing rows all zero and without a label.
- Splits: ``train`` the first ``len(y)`` nodes (20 per class), ``dev`` the 500 after them,
  ``test`` the 1,000 ids of ``test.index``.

Every file is untrusted input, checked before anything of the size it declares is allocated:
regular files only, read with caps (:mod:`attnkit.data.bounded`); the matrices' declared shapes
agree with each other and with the test ids, and stay within :data:`MAX_NODES` and
:data:`MAX_CELLS`; the adjacency lists hold node ids only (no strings, huge or negative ints,
nested lists), :data:`MAX_EDGES` of them at most (one list shared by many keys counts for each).

The files' sha256 are checked (:data:`SHA256`); missing files are fetched from the public home
(:data:`BASE_URL`) when ``download`` is set. Only Cora's checksums are recorded here: the other
data sets are read from a local copy and never downloaded without a checksum to check.
"""

from __future__ import annotations

import reprlib
from pathlib import Path

import numpy as np
import torch

from attnkit.data.bounded import ascii_int, text_lines
from attnkit.data.download import ensure_files
from attnkit.data.graph.graph_data import Graph, index_mask, undirected
from attnkit.data.graph.safe_pickle import SparseMatrix, load_pickle
from attnkit.errors import DataError

BASE_URL = "https://github.com/kimiyoung/planetoid/raw/master/data/"
PARTS = ("x", "y", "tx", "ty", "allx", "ally", "graph", "test.index")
DEV_NODES = 500

#: data set -> file name -> sha256 (the copy of ../shared/data/planetoid, its README's sums)
SHA256 = {
    "cora": {
        "ind.cora.x": "23cfa55d91c6f624233f5eb7b6e3f141f1bd2b2ae39608a63cf5d084bb27baab",
        "ind.cora.y": "94465c14eb53e04ca262198dcbb2521ee8af60fb3f3d546cd6ca24a511b0e7d1",
        "ind.cora.tx": "b9afbaa4a400df991f6f02ef677e1e44da55ffc04801fd02f9e673987829226a",
        "ind.cora.ty": "41f5ac76596a1699cc33f53084a2419e92961c42bb75f36fc38e616d348532ad",
        "ind.cora.allx": "9419ba2f26f5c35243db64aba110e0f35a04851609e0dc5433450676ca6b8543",
        "ind.cora.ally": "2b998f5cc7fedc86e7f97ca2498f47a1ffc1462c29e2d578b23bf3f62b6e7d71",
        "ind.cora.graph": "58f13302f39dde8852dad6fe6d15b89b077b6d7f837626bce671ef80344b383d",
        "ind.cora.test.index": "297ce89af2b51a6a194181c7dbe1796c6a1cf9cd9349a88383b1b1e227867875",
    },
}
NAMES = ("cora", "citeseer", "pubmed")


#: nodes of a Planetoid graph (Pubmed, the largest, has 19,717)
MAX_NODES = 5_000_000
#: entries of one dense feature or label matrix (Pubmed's features: 9.9 million)
MAX_CELLS = 200_000_000
#: entries of the adjacency lists together (Pubmed's: 88,648)
MAX_EDGES = 50_000_000
#: digits of a test node id
MAX_ID_DIGITS = 12


def _count(value) -> int | None:
    """``value`` as an int when it is a non-negative Python or numpy integer (not a bool)."""
    if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < 0:
        return None
    return int(value)


def _declared_shape(value, path: Path) -> tuple[int, int]:
    """The (rows, cols) a pickled matrix declares, checked against :data:`MAX_CELLS` before
    anything of that size is allocated (a sparse matrix is made dense only after)."""
    if isinstance(value, SparseMatrix):
        shape = value.declared_shape()
    elif isinstance(value, np.ndarray) and value.dtype != object:
        shape = value.shape
    else:
        raise DataError(
            f"expected a numpy array or a scipy sparse matrix, got {type(value).__name__}",
            path=path,
        )
    dims = tuple(_count(d) for d in shape) if isinstance(shape, tuple) else ()
    if len(dims) != 2 or None in dims:
        raise DataError(f"expected a 2-D matrix, got shape {reprlib.repr(shape)}", path=path)
    if dims[0] > MAX_NODES or dims[0] * dims[1] > MAX_CELLS:
        raise DataError(
            f"a {dims[0]:,} x {dims[1]:,} matrix is above the caps ({MAX_NODES:,} rows, "
            f"{MAX_CELLS:,} entries): not a Planetoid file",
            path=path,
        )
    return dims


def _dense(value, path: Path) -> np.ndarray:
    """A pickled feature or label matrix (its shape already checked) as dense float32."""
    try:
        array = value.toarray() if isinstance(value, SparseMatrix) else np.asarray(value)
        return array.astype(np.float32)
    except (ValueError, TypeError, IndexError, OverflowError) as exc:
        raise DataError(f"not a Planetoid matrix ({exc})", path=path) from None


def _test_index(path: Path) -> np.ndarray:
    ids = []
    for number, line in text_lines(path):
        node = ascii_int(line.strip(), MAX_ID_DIGITS)
        if node is None:
            raise DataError(f"expected a node id, got {line.strip()[:40]!r}", path, number)
        if len(ids) == MAX_NODES:
            raise DataError(f"more than {MAX_NODES:,} test node ids", path, number)
        ids.append(node)
    if not ids:
        raise DataError("no test node ids", path=path)
    return np.asarray(ids, np.int64)


def _first_bad(values: list, n: int):
    """The first item of ``values`` that is not a node id in 0..n-1 (None: all are)."""
    return next((v for v in values if _count(v) is None or _count(v) >= n), None)


def _edges(graph, n: int, path: Path) -> torch.Tensor:
    """The adjacency dict's edges, every key and value a node id in 0..n-1 and their total
    within :data:`MAX_EDGES`, checked before the edge arrays are allocated."""
    if not isinstance(graph, dict):
        raise DataError("expected a dict of adjacency lists", path=path)
    total = 0
    for node, neighbours in graph.items():
        if _first_bad([node], n) is not None or not isinstance(neighbours, list):
            raise DataError(
                f"node {reprlib.repr(node)}: expected a node id (0..{n - 1}) and a list of them",
                path=path,
            )
        total += len(neighbours)  # one list shared by every key counts once per key
        if total > MAX_EDGES:
            raise DataError(f"over {MAX_EDGES:,} adjacency entries: not a Planetoid graph", path)
    rows, cols, at = np.empty(total, np.int64), np.empty(total, np.int64), 0
    for node, neighbours in graph.items():
        bad = None
        if not set(map(type, neighbours)) <= {int}:  # a string, a list, a float...
            bad = _first_bad(neighbours, n)
        if bad is None:
            try:
                cols[at : at + len(neighbours)] = neighbours
            except OverflowError:  # an int beyond int64
                bad = _first_bad(neighbours, n)
        if bad is None and len(neighbours):
            span = cols[at : at + len(neighbours)]
            if (span < 0).any() or (span >= n).any():
                bad = _first_bad(neighbours, n)
        if bad is not None:
            raise DataError(
                f"node {node}: neighbour {reprlib.repr(bad)} is not a node id (0..{n - 1})",
                path=path,
            )
        rows[at : at + len(neighbours)] = node
        at += len(neighbours)
    return undirected(rows, cols, n)


def _check_shapes(shapes: dict[str, tuple[int, int]], tests: int, directory: Path) -> None:
    """The eight files' declared sizes agree with each other (and the test ids)."""
    rows = {part: shape[0] for part, shape in shapes.items()}
    pairs = (("x", "y"), ("allx", "ally"), ("tx", "ty"))
    if any(rows[a] != rows[b] for a, b in pairs) or rows["tx"] != tests:
        raise DataError(
            f"{rows['tx']} test rows and {tests} test ids, {rows['allx']} rows of allx and "
            f"{rows['ally']} of ally, {rows['x']} of x and {rows['y']} of y: the files are of "
            "different data sets",
            path=directory,
        )
    for group in (("x", "tx", "allx"), ("y", "ty", "ally")):
        if len({shapes[part][1] for part in group}) != 1 or rows[group[0]] > rows[group[2]]:
            widths = ", ".join(f"{p} {shapes[p][0]} x {shapes[p][1]}" for p in group)
            raise DataError(f"matrices of different data sets ({widths})", path=directory)


def read_planetoid(directory: str | Path, name: str, download: bool = False) -> Graph:
    """Data set ``name`` (cora, citeseer, pubmed) from ``directory`` as a :class:`Graph`."""
    directory = Path(directory)
    files = {f"ind.{name}.{part}": SHA256.get(name, {}).get(f"ind.{name}.{part}") for part in PARTS}
    checked = {f: s for f, s in files.items() if s}
    ensure_files(directory, checked, BASE_URL, download=download, folder="planetoid")
    for name_of_file, checksum in files.items():
        if not checksum and not (directory / name_of_file).exists():
            raise DataError(
                f"missing data file {name_of_file!r} in {directory}: attnkit records no checksums "
                f"for {name}, so it does not download it; copy the eight ind.{name}.* files "
                f"there from {BASE_URL}",
                path=directory / name_of_file,
            )
    path = {part: directory / f"ind.{name}.{part}" for part in PARTS}
    matrices = {p: load_pickle(path[p]) for p in ("x", "y", "tx", "ty", "allx", "ally")}
    shapes = {p: _declared_shape(value, path[p]) for p, value in matrices.items()}
    test = _test_index(path["test.index"])
    _check_shapes(shapes, len(test), directory)
    order = np.sort(test)
    if order[0] != shapes["allx"][0] or len(np.unique(test)) != len(test):
        raise DataError(
            f"test ids must be distinct and start at {shapes['allx'][0]}", path=path["test.index"]
        )
    n = shapes["allx"][0] + int(order[-1] - order[0]) + 1
    if n > MAX_NODES or n * max(shapes["x"][1], shapes["y"][1]) > MAX_CELLS:
        raise DataError(
            f"test ids up to {int(order[-1]):,}: {n:,} nodes, above the caps ({MAX_NODES:,} "
            f"nodes, {MAX_CELLS:,} entries a matrix)",
            path=path["test.index"],
        )
    x, y, tx, ty, allx, ally = (_dense(value, path[p]) for p, value in matrices.items())
    del matrices
    # rows of tx/ty at their ids; ids no file names (Citeseer's isolated nodes) stay empty
    span = n - len(allx)
    tx_full = np.zeros((span, tx.shape[1]), np.float32)
    ty_full = np.zeros((span, ty.shape[1]), np.float32)
    tx_full[test - order[0]], ty_full[test - order[0]] = tx, ty
    features = np.concatenate([allx, tx_full])
    onehot = np.concatenate([ally, ty_full])
    labels = np.where(onehot.sum(1) > 0, onehot.argmax(1), -1)
    masks = {
        "train": index_mask(np.arange(len(y)), n),
        "dev": index_mask(np.arange(len(y), min(len(y) + DEV_NODES, len(allx))), n),
        "test": index_mask(test, n),
    }
    edges = _edges(load_pickle(path["graph"]), n, path["graph"])
    return Graph(
        name=name,
        x=torch.from_numpy(features),
        y=torch.from_numpy(labels.astype(np.int64)),
        edge_index=edges,
        masks=masks,
        classes=[str(c) for c in range(onehot.shape[1])],
        nodes=[str(i) for i in range(n)],
    )
