"""Hostile data files for the graph and text families, registered into benchmarks/faults.py
(item ``f44``): a FIFO, ``/dev/zero`` or an endless line in place of a node table, an edge list
or a text TSV, and a Planetoid matrix declaring far more than it holds. Each must end at once
with exit 2 and one line naming the file (``attnkit train``, no model needed).
"""

from __future__ import annotations

import os
import pickle
from pathlib import Path

import numpy as np
import yaml

ITEM = "f44"


def _graph_config(folder: Path, nodes: str, edges: str = "edges.tsv") -> Path:
    data = {"name": "edge_list", "nodes": nodes, "edges": edges}
    path = folder / "g.yaml"
    config = {"family": "graph", "data": data, "train": {"epochs": 1, "threads": 1}}
    path.write_text(yaml.safe_dump(config), encoding="utf-8")
    (folder / "edges.tsv").write_text("a\tb\n", encoding="utf-8")
    return path


def _text_config(folder: Path, train: str) -> Path:
    (folder / "ok.tsv").write_text("pos\tgood film\nneg\tbad film\n", encoding="utf-8")
    data = {"task": "tsv", "train": train, "dev": "ok.tsv", "test": "ok.tsv"}
    path = folder / "t.yaml"
    config = {"family": "text", "data": data, "train": {"epochs": 1, "threads": 1}}
    path.write_text(yaml.safe_dump(config), encoding="utf-8")
    return path


def _sparse(shape) -> bytes:
    """A hand-written pickle of a scipy CSR matrix declaring ``shape`` with one entry."""
    state = {"format": "csr", "_shape": shape, "data": np.ones(1), "indices": np.zeros(1, int)}
    state["indptr"] = np.array([0, 1, 1])
    return b"\x80\x03cscipy.sparse._csr\ncsr_matrix\n)\x81" + pickle.dumps(state, 3)[2:-1] + b"b."


def _planetoid(folder: Path) -> Path:
    """Citeseer files (no checksums recorded) whose allx declares 700,000 x 1,433."""
    eye = np.eye(2)
    parts = {"x": np.zeros((2, 3)), "y": eye, "tx": np.zeros((2, 3)), "ty": eye}
    parts.update(ally=np.eye(2)[[0, 1, 0, 1]], graph={0: [1]})
    for part, value in parts.items():
        (folder / f"ind.citeseer.{part}").write_bytes(pickle.dumps(value, 4))
    (folder / "ind.citeseer.allx").write_bytes(_sparse((700_000, 1_433)))
    (folder / "ind.citeseer.test.index").write_text("4\n5\n", encoding="utf-8")
    path = folder / "p.yaml"
    data = {"name": "citeseer", "directory": str(folder), "download": False}
    path.write_text(yaml.safe_dump({"family": "graph", "data": data}), encoding="utf-8")
    return path


def register(h) -> None:
    """Add the cases to ``h.CASES`` (``h``: the faults module)."""

    def train(name: str, setup, *mentions: str) -> None:
        def run(ctx, folder: Path) -> str | None:
            config = setup(folder)
            res = ctx.attnkit(["train", str(config), "--output-dir", "run"], folder, timeout=60)
            return h.one_line_error(res, *mentions)

        h.CASES.append(h.Case(name, ITEM, run, needs_model=False))

    def fifo(folder: Path, name: str) -> str:
        os.mkfifo(folder / name)
        return name

    def endless(folder: Path, name: str) -> str:
        (folder / name).write_bytes(b"x" * (2 << 20))  # one line of 2 MB: above the 1 MB cap
        return name

    train(
        "graph_nodes_fifo",
        lambda f: _graph_config(f, fifo(f, "nodes.tsv")),
        "nodes.tsv",
        "not a regular file",
    )
    train(
        "graph_nodes_dev_zero",
        lambda f: _graph_config(f, "/dev/zero"),
        "/dev/zero",
        "not a regular file",
    )
    train(
        "graph_nodes_endless_line",
        lambda f: _graph_config(f, endless(f, "nodes.tsv")),
        "nodes.tsv:1",
        "line longer",
    )
    train("text_tsv_fifo", lambda f: _text_config(f, fifo(f, "train.tsv")), "train.tsv")
    train("planetoid_declared_shape", _planetoid, "ind.citeseer.allx", "above the caps")
