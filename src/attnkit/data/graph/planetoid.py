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

The files' sha256 are checked (:data:`SHA256`); missing files are fetched from the public home
(:data:`BASE_URL`) when ``download`` is set. Only Cora's checksums are recorded here: the other
data sets are read from a local copy and never downloaded without a checksum to check.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import torch

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


def _dense(value, path: Path) -> np.ndarray:
    """A pickled feature or label matrix as a dense 2-D float32 array."""
    try:
        array = value.toarray() if isinstance(value, SparseMatrix) else np.asarray(value)
    except ValueError as exc:
        raise DataError(f"not a Planetoid matrix ({exc})", path=path) from None
    if array.ndim != 2 or array.dtype == object:
        raise DataError(f"expected a 2-D numeric matrix, got shape {array.shape}", path=path)
    return array.astype(np.float32)


def _test_index(path: Path) -> np.ndarray:
    ids = []
    with open(path, encoding="utf-8") as lines:
        for number, line in enumerate(lines, 1):
            text = line.strip()
            if not text:
                continue
            if not text.isdigit():
                raise DataError(f"expected a node id, got {text[:40]!r}", path=path, line=number)
            ids.append(int(text))
    if not ids:
        raise DataError("no test node ids", path=path)
    return np.asarray(ids, np.int64)


def _edges(graph, n: int, path: Path) -> torch.Tensor:
    if not isinstance(graph, dict):
        raise DataError("expected a dict of adjacency lists", path=path)
    rows, cols = [], []
    for node, neighbours in graph.items():
        if not isinstance(node, int) or not isinstance(neighbours, list):
            raise DataError(f"node {node!r}: expected an int and a list of ints", path=path)
        rows.extend([node] * len(neighbours))
        cols.extend(neighbours)
    rows, cols = np.asarray(rows, np.int64), np.asarray(cols, np.int64)
    bad = (rows < 0) | (rows >= n) | (cols < 0) | (cols >= n)
    if bad.any():
        at = int(np.argmax(bad))
        raise DataError(f"edge {rows[at]} -> {cols[at]}: no such node (0..{n - 1})", path=path)
    return undirected(rows, cols, n)


def read_planetoid(directory: str | Path, name: str, download: bool = False) -> Graph:
    """Data set ``name`` (cora, citeseer, pubmed) from ``directory`` as a :class:`Graph`."""
    directory = Path(directory)
    files = {f"ind.{name}.{part}": SHA256.get(name, {}).get(f"ind.{name}.{part}") for part in PARTS}
    checked = {f: s for f, s in files.items() if s}
    ensure_files(directory, checked, BASE_URL, download=download, folder="planetoid")
    for name_of_file, checksum in files.items():
        if not checksum and not (directory / name_of_file).is_file():
            raise DataError(
                f"missing data file {name_of_file!r} in {directory}: attnkit records no checksums "
                f"for {name}, so it does not download it; copy the eight ind.{name}.* files "
                f"there from {BASE_URL}",
                path=directory / name_of_file,
            )
    path = {part: directory / f"ind.{name}.{part}" for part in PARTS}
    x, tx, allx = (_dense(load_pickle(path[p]), path[p]) for p in ("x", "tx", "allx"))
    y, ty, ally = (_dense(load_pickle(path[p]), path[p]) for p in ("y", "ty", "ally"))
    test = _test_index(path["test.index"])
    order = np.sort(test)
    span = int(order[-1] - order[0]) + 1
    if len(tx) != len(test) or len(ty) != len(test) or len(allx) != len(ally):
        raise DataError(
            f"{len(tx)} test rows and {len(test)} test ids, {len(allx)} rows of allx and "
            f"{len(ally)} of ally: the files are of different data sets",
            path=directory,
        )
    if order[0] != len(allx) or len(np.unique(test)) != len(test):
        raise DataError(f"test ids must be distinct and start at {len(allx)}", path=path["tx"])
    # rows of tx/ty at their ids; ids no file names (Citeseer's isolated nodes) stay empty
    tx_full = np.zeros((span, tx.shape[1]), np.float32)
    ty_full = np.zeros((span, ty.shape[1]), np.float32)
    tx_full[test - order[0]], ty_full[test - order[0]] = tx, ty
    features = np.concatenate([allx, tx_full])
    onehot = np.concatenate([ally, ty_full])
    labels = np.where(onehot.sum(1) > 0, onehot.argmax(1), -1)
    n = len(features)
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
