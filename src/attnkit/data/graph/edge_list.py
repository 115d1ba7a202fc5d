"""A graph of your own: an edge list and a node table, both tab-separated text.

``nodes.tsv``, one node a line: ``id<TAB>label<TAB>split<TAB>features``, where ``split`` is
``train``, ``dev``, ``test`` or ``-`` (in no split), ``label`` is any class name (``-``: none)
and ``features`` are numbers separated by spaces or commas, as many on every line::

    # id    label   split   features
    p1      ml      train   0 1 0 1
    p2      db      test    1 0 0 1

``edges.tsv``, one edge a line: ``source<TAB>target`` (node ids of the table). Edges are made
undirected unless ``data.directed`` is set. Lines that are blank or start with ``#`` are skipped.
Every problem is one :class:`~attnkit.errors.DataError` naming the file and line: a line without
its columns, an edge to a node the table lacks, features of another width, a split that is none
of the above, a node listed twice, a feature that is nan or inf. Both files are read with
:func:`attnkit.data.bounded.text_lines`: regular files only, size and line caps.
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import torch

from attnkit.data.bounded import text_lines
from attnkit.data.graph.graph_data import SPLITS, Graph, undirected
from attnkit.errors import DataError

_NUMBERS = re.compile(r"[,\s]+")


def _lines(path: Path):
    """(line number, text) of the lines that hold data, read with the bounds of
    :func:`attnkit.data.bounded.text_lines` (regular files only, size and line caps)."""
    for number, text in text_lines(path):
        if not text.lstrip().startswith("#"):
            yield number, text


def _node_rows(path: Path):
    """Parsed rows of the node table: (names, labels, splits, features (N, D))."""
    names, labels, splits, features, index = [], [], [], [], {}
    width = None
    for number, text in _lines(path):
        parts = text.split("\t")
        if len(parts) != 4:
            raise DataError(
                f"expected 4 tab-separated columns (id, label, split, features), got {len(parts)}",
                path,
                number,
            )
        name, label, split, values = (p.strip() for p in parts)
        if not name or name in index:
            raise DataError(f"node id {name!r} is empty or listed twice", path, number)
        if split not in (*SPLITS, "-"):
            raise DataError(f"split {split!r}: expected train, dev, test or -", path, number)
        try:
            row = [float(v) for v in _NUMBERS.split(values) if v]
        except ValueError:
            raise DataError(f"features must be numbers: {values[:60]!r}", path, number) from None
        with np.errstate(over="ignore"):  # beyond float32: inf, refused just below
            row = np.asarray(row, np.float32)  # 4 bytes a feature, not a Python float's 32
        if not np.isfinite(row).all():
            raise DataError(
                "features must be finite float32 numbers (no nan, inf or beyond 3.4e38)",
                path,
                number,
            )
        if width is None:
            width = len(row)
        if len(row) != width or width == 0:
            raise DataError(
                f"{len(row)} features; the first node has {width} (every node the same number)",
                path,
                number,
            )
        index[name] = len(names)
        names.append(name), labels.append(label), splits.append(split), features.append(row)
    if not names:
        raise DataError("no nodes", path=path)
    return names, labels, splits, np.stack(features)


def _edge_rows(path: Path, index: dict[str, int], nodes_path: Path):
    rows, cols = [], []
    for number, text in _lines(path):
        parts = [p.strip() for p in text.split("\t")]
        if len(parts) != 2 or not all(parts):
            raise DataError("expected 'source<TAB>target'", path, number)
        for name in parts:
            if name not in index:
                raise DataError(f"node {name!r} is not in {nodes_path}", path, number)
        rows.append(index[parts[0]]), cols.append(index[parts[1]])
    return np.asarray(rows, np.int64), np.asarray(cols, np.int64)


def read_edge_list(nodes: str | Path, edges: str | Path, directed: bool = False) -> Graph:
    """The graph of a node table and an edge list (the module's format) as a :class:`Graph`."""
    nodes, edges = Path(nodes), Path(edges)
    names, labels, splits, features = _node_rows(nodes)
    classes = sorted({label for label in labels if label != "-"})
    class_id = {c: i for i, c in enumerate(classes)}
    y = torch.tensor([class_id.get(label, -1) for label in labels], dtype=torch.long)
    index = {name: i for i, name in enumerate(names)}
    rows, cols = _edge_rows(edges, index, nodes)
    split = np.asarray(splits)
    masks = {s: torch.from_numpy(split == s) for s in SPLITS}
    for s, mask in masks.items():
        if bool((mask & (y < 0)).any()):
            at = names[int(torch.nonzero(mask & (y < 0))[0])]
            raise DataError(f"node {at!r} is in split {s} without a label", path=nodes)
    return Graph(
        name=nodes.stem,
        x=torch.from_numpy(features),
        y=y,
        edge_index=undirected(rows, cols, len(names), directed),
        masks=masks,
        classes=classes,
        nodes=names,
    )
