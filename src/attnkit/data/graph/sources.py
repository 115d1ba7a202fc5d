"""``data:`` of a ``family: graph`` experiment, and :data:`SOURCES`: ``data.name`` -> reader.

``data.name`` is ``cora``, ``citeseer`` or ``pubmed`` (the Planetoid files, read from
``data.directory``, else ``$ATTNKIT_DATA_DIR/planetoid``, else the user cache:
:mod:`attnkit.data.location`), ``edge_list`` (your own graph: ``data.nodes`` and ``data.edges``,
:mod:`attnkit.data.graph.edge_list`) or ``dictionary_lookup`` (generated with ``data.k`` keys,
:mod:`attnkit.data.graph.lookup`). A config written for Cora trains on Citeseer with only
``--set data.name=citeseer``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import torch

from attnkit.config import at_least, check_values
from attnkit.data.graph.edge_list import read_edge_list
from attnkit.data.graph.graph_data import Graph
from attnkit.data.graph.lookup import dictionary_lookup
from attnkit.data.graph.planetoid import NAMES, read_planetoid
from attnkit.data.location import dataset_dir
from attnkit.errors import ConfigError


@dataclass
class GraphDataConfig:
    """``data:`` of a graph experiment."""

    name: str = "cora"
    """cora, citeseer, pubmed (Planetoid), edge_list (your own TSV files) or dictionary_lookup."""
    directory: str | None = None
    """Planetoid: the directory of the ind.NAME.* files (null: $ATTNKIT_DATA_DIR/planetoid, else
    the user cache)."""
    download: bool = True
    """Planetoid: fetch missing files from the public home (checksums checked)."""
    nodes: str | None = None
    """edge_list: the node table (id, label, split, features; tab-separated)."""
    edges: str | None = None
    """edge_list: the edge list (source, target; tab-separated)."""
    directed: bool = False
    """edge_list: keep each edge one way only (default: both ways)."""
    k: int = 10
    """dictionary_lookup: keys (and queries) per graph."""
    graphs: int = 200
    """dictionary_lookup: training graphs (a tenth as many for dev and for test)."""
    seed: int = 0
    """dictionary_lookup: seed of the generated graphs."""
    normalize: bool = True
    """Scale each node's features to sum to 1 (the GAT and GCN papers' preprocessing)."""

    CHOICES = {"name": (*NAMES, "edge_list", "dictionary_lookup")}
    RULES = {"k": at_least(2), "graphs": at_least(1)}

    def validate(self, where: str) -> None:
        check_values(self, where, self.RULES)
        if self.name == "edge_list" and not (self.nodes and self.edges):
            raise ConfigError(f"{where}: data.name edge_list needs data.nodes and data.edges")


def _planetoid(cfg: GraphDataConfig) -> Graph:
    return read_planetoid(dataset_dir("planetoid", cfg.directory), cfg.name, cfg.download)


#: ``data.name`` -> the reader of its graph
SOURCES: dict[str, Callable[[GraphDataConfig], Graph]] = {
    **{name: _planetoid for name in NAMES},
    "edge_list": lambda cfg: read_edge_list(cfg.nodes, cfg.edges, cfg.directed),
    "dictionary_lookup": lambda cfg: dictionary_lookup(cfg.k, cfg.graphs, cfg.seed),
}


def load_graph(cfg: GraphDataConfig) -> Graph:
    """The graph ``cfg`` names (its features row-normalised where ``cfg.normalize``)."""
    graph = SOURCES[cfg.name](cfg)
    if cfg.normalize:
        total = graph.x.sum(1, keepdim=True)
        graph.x = graph.x / torch.where(total == 0, torch.ones_like(total), total)
    return graph
