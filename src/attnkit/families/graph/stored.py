"""The graph a graph model was trained on, stored inside its checkpoint, so loading it follows
no data path, directory or download flag of the checkpoint's config.

``graph.safetensors`` holds the tensors: ``x`` (N, D) float32, or for sparse features their rows
(CSR): ``x.shape`` (2,) int64, ``x.rowptr`` (N + 1,) int64, ``x.col`` (K,) int16 (int32 past
32,767 columns) and either ``x.row_value`` (N,) float32 (every non-zero of a row alike: the
row-normalised binary features of Planetoid, Cora's in 130 KB) or ``x.value`` (K,) float32;
(an older checkpoint's ``x.index`` (2, K) int64 with ``x.value`` is read too), ``y`` (N,) int64,
``edge_index`` (2, E) int64, ``mask.SPLIT`` (N,) bool and ``extra.NAME`` (N, ...); ``graph.json``
the names: ``{"name", "classes", "nodes"}``. :func:`read_graph` checks every shape, dtype and
value range against the others (and the Planetoid caps) before the graph is built: a crafted
file is one CheckpointError naming it.
"""

from __future__ import annotations

import json
from pathlib import Path

import torch
from safetensors.torch import save_file

from attnkit import checkpoint as ckpt
from attnkit.data.graph.graph_data import SPLITS, Graph
from attnkit.data.graph.planetoid import MAX_CELLS, MAX_NODES
from attnkit.errors import CheckpointError

TENSORS, NAMES = "graph.safetensors", "graph.json"


def write_graph(directory: Path, graph: Graph) -> None:
    """``graph`` into a checkpoint directory being written (its features as sparse rows when
    that is smaller: Planetoid's are 1-2% non-zero)."""
    tensors = {"y": graph.y, "edge_index": graph.edge_index}
    x = graph.x.detach().cpu().contiguous()
    if int((x != 0).sum()) * 2 < x.numel():  # 2-8 bytes a sparse entry against 4 a dense one
        tensors.update(_rows(x))
    else:
        tensors["x"] = x
    tensors.update({f"mask.{s}": m for s, m in graph.masks.items()})
    tensors.update({f"extra.{k}": v for k, v in graph.extra.items()})
    save_file({k: v.detach().cpu().contiguous() for k, v in tensors.items()}, directory / TENSORS)
    names = {"name": graph.name, "classes": graph.classes, "nodes": graph.nodes}
    (directory / NAMES).write_text(json.dumps(names), encoding="utf-8")


def _rows(x: torch.Tensor) -> dict[str, torch.Tensor]:
    """The (N, D) features ``x`` as sparse rows: ``x.shape``, ``x.rowptr``, ``x.col`` and one
    value a row (``x.row_value``) where each row's non-zeros are alike, else ``x.value``."""
    rows, cols = (x != 0).nonzero(as_tuple=True)  # row-major: each row's columns in order
    values = x[rows, cols]
    rowptr = torch.zeros(x.shape[0] + 1, dtype=torch.int64)
    rowptr[1:] = torch.bincount(rows, minlength=x.shape[0]).cumsum(0)
    wide = x.shape[1] > torch.iinfo(torch.int16).max + 1
    parts = {
        "x.shape": torch.tensor(list(x.shape), dtype=torch.int64),
        "x.rowptr": rowptr,
        "x.col": cols.to(torch.int32 if wide else torch.int16),
    }
    per_row = torch.zeros(x.shape[0])
    per_row[rows] = values  # the last of each row's values; all of them when they are alike
    if torch.equal(per_row[rows], values):
        parts["x.row_value"] = per_row
    else:
        parts["x.value"] = values
    return parts


def _from_rows(t: dict, rows: int, cols: int, where: str) -> torch.Tensor:
    """(rows, cols) float32 from ``x.rowptr``, ``x.col`` and ``x.row_value`` or ``x.value``,
    each checked against the others before the index_put."""
    rowptr, col = t["x.rowptr"], t.get("x.col")
    if rowptr.dtype != torch.int64 or rowptr.shape != (rows + 1,):
        raise CheckpointError(f"{where}: x.rowptr must be (N + 1,) int64")
    if col is None or col.dtype not in (torch.int16, torch.int32) or col.dim() != 1:
        raise CheckpointError(f"{where}: x.col must be (K,) int16 or int32")
    counts = rowptr.diff()
    if int(rowptr[0]) != 0 or bool((counts < 0).any()) or int(rowptr[-1]) != col.numel():
        raise CheckpointError(f"{where}: x.rowptr must rise from 0 to the length of x.col")
    if col.numel() and (int(col.min()) < 0 or int(col.max()) >= cols):
        raise CheckpointError(f"{where}: x.col outside x.shape")
    row_of = torch.repeat_interleave(torch.arange(rows), counts)
    if "x.row_value" in t:
        per_row = t["x.row_value"]
        if per_row.dtype != torch.float32 or per_row.shape != (rows,):
            raise CheckpointError(f"{where}: x.row_value must be (N,) float32")
        value = per_row[row_of]
    else:
        value = t.get("x.value")
        if value is None or value.dtype != torch.float32 or value.shape != col.shape:
            raise CheckpointError(f"{where}: x.value must be (K,) float32, one per x.col")
    dense = torch.zeros(rows, cols)
    dense[row_of, col.long()] = value
    return dense


def _features(t: dict, where: str) -> torch.Tensor:
    """(N, D) float32 from ``x`` or its sparse parts, the shape checked before allocating."""
    if "x" in t:
        return t["x"]
    index, value, shape = (t.get(k) for k in ("x.index", "x.value", "x.shape"))
    if shape is None or shape.dtype != torch.int64 or ("x.rowptr" not in t and index is None):
        raise CheckpointError(f"{where}: no features (x, or x.shape with x.rowptr or x.index)")
    if shape.shape != (2,) or bool((shape < 0).any()):
        raise CheckpointError(f"{where}: x.shape must be two sizes")
    rows, cols = (int(v) for v in shape)
    if rows > MAX_NODES or rows * cols > MAX_CELLS:
        raise CheckpointError(f"{where}: features of {rows:,} x {cols:,}, above the caps")
    if "x.rowptr" in t:
        return _from_rows(t, rows, cols, where)
    if value is None:
        raise CheckpointError(f"{where}: x.index without x.value")
    if index.dtype != torch.int64 or index.dim() != 2 or index.shape[0] != 2:
        raise CheckpointError(f"{where}: x.index must be (2, K) int64")
    if value.dtype != torch.float32 or value.shape != (index.shape[1],):
        raise CheckpointError(f"{where}: x.value must be (K,) float32, one per x.index column")
    if index.numel() and (bool((index < 0).any()) or int(index[0].max()) >= rows):
        raise CheckpointError(f"{where}: x.index outside x.shape")
    if index.numel() and int(index[1].max()) >= cols:
        raise CheckpointError(f"{where}: x.index outside x.shape")
    dense = torch.zeros(rows, cols)  # indices checked above: an index_put, no sparse tensor
    dense[index[0], index[1]] = value
    return dense


def _check(graph: Graph, where: str) -> None:
    n = graph.x.shape[0] if graph.x.dim() == 2 else -1
    problems = [
        (graph.x.dim() != 2 or graph.x.dtype != torch.float32, "x must be (N, D) float32"),
        (not bool(torch.isfinite(graph.x).all()), "x holds nan or inf"),
        (graph.y.dtype != torch.int64 or graph.y.shape != (n,), "y must be (N,) int64"),
        (len(graph.nodes) != n, f"{len(graph.nodes)} node names for {n} nodes"),
        (graph.edge_index.dtype != torch.int64, "edge_index must be int64"),
        (graph.edge_index.dim() != 2 or graph.edge_index.shape[0] != 2, "edge_index: (2, E)"),
    ]
    for bad, says in problems:
        if bad:
            raise CheckpointError(f"{where}: {says}")
    if graph.y.numel() and not (
        -1 <= int(graph.y.min()) and int(graph.y.max()) < len(graph.classes)
    ):
        raise CheckpointError(f"{where}: a label outside -1..{len(graph.classes) - 1}")
    edges = graph.edge_index
    if edges.numel() and (int(edges.min()) < 0 or int(edges.max()) >= n):
        raise CheckpointError(f"{where}: an edge to a node outside 0..{n - 1}")
    for name, tensor in {**graph.masks, **graph.extra}.items():
        if tensor.dim() < 1 or tensor.shape[0] != n:
            raise CheckpointError(f"{where}: {name} does not have one entry a node")
    if any(m.dtype != torch.bool for m in graph.masks.values()):
        raise CheckpointError(f"{where}: split masks must be bool")


def read_graph(directory: str | Path) -> Graph | None:
    """The graph stored in the checkpoint ``directory``, checked; None when it holds none (a
    checkpoint written before graphs travelled with their models)."""
    directory = Path(directory)
    ckpt.check_regular(directory / TENSORS)
    if not (directory / TENSORS).exists():
        return None
    where = str(directory / TENSORS)
    tensors = ckpt.read_tensors(directory / TENSORS)
    names = ckpt.read_json(directory / NAMES)
    if not isinstance(names, dict) or not isinstance(names.get("name"), str):
        raise CheckpointError(f"{directory / NAMES}: expected name, classes and nodes")
    lists = [names.get(k) for k in ("classes", "nodes")]
    if not all(isinstance(v, list) and all(isinstance(s, str) for s in v) for v in lists):
        raise CheckpointError(f"{directory / NAMES}: classes and nodes must be lists of names")
    if "y" not in tensors or "edge_index" not in tensors:
        raise CheckpointError(f"{where}: y and edge_index are missing")
    graph = Graph(
        name=names["name"],
        x=_features(tensors, where),
        y=tensors["y"],
        edge_index=tensors["edge_index"],
        masks={s: tensors[f"mask.{s}"] for s in SPLITS if f"mask.{s}" in tensors},
        classes=lists[0],
        nodes=lists[1],
        extra={k[6:]: v for k, v in tensors.items() if k.startswith("extra.")},
    )
    _check(graph, where)
    return graph
