"""One graph for node classification (:class:`Graph`) and the edge-list helpers every reader
shares.

Shapes: N nodes, E edges, D features. ``edge_index`` (2, E) holds each edge once per direction
(row 0 the source, row 1 the target), without self-loops and without duplicates; a model adds
its self-loops (:func:`with_self_loops`).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import torch
from torch import Tensor

SPLITS = ("train", "dev", "test")


@dataclass
class Graph:
    """A graph's nodes, features, labels, edges and splits.

    ``x`` (N, D) float32; ``y`` (N,) int64 class ids, -1 for a node without a label; ``masks``
    split name -> (N,) bool; ``classes`` the class names; ``nodes`` the node names (ids of the
    source files); ``extra`` what a task adds (DictionaryLookup: each node's ``role`` and
    ``attribute``, its ``graph`` number).
    """

    name: str
    x: Tensor
    y: Tensor
    edge_index: Tensor
    masks: dict[str, Tensor]
    classes: list[str]
    nodes: list[str]
    extra: dict[str, Tensor] = field(default_factory=dict)

    @property
    def num_nodes(self) -> int:
        return int(self.x.shape[0])

    @property
    def num_features(self) -> int:
        return int(self.x.shape[1])

    def describe(self) -> str:
        sizes = ", ".join(f"{int(self.masks[s].sum())} {s}" for s in SPLITS if s in self.masks)
        return (
            f"{self.name}: {self.num_nodes} nodes, {self.edge_index.shape[1]} directed edges, "
            f"{self.num_features} features, {len(self.classes)} classes ({sizes})"
        )


def undirected(rows: np.ndarray, cols: np.ndarray, n: int, directed: bool = False) -> Tensor:
    """``(2, E)`` int64 edges of ``rows -> cols`` (and back, unless ``directed``), self-loops
    and duplicates removed, sorted by target then source."""
    rows, cols = np.asarray(rows, np.int64), np.asarray(cols, np.int64)
    if not directed:
        rows, cols = np.concatenate([rows, cols]), np.concatenate([cols, rows])
    keep = rows != cols
    keys = np.unique(cols[keep] * n + rows[keep])
    return torch.from_numpy(np.stack([keys % n, keys // n]))


def with_self_loops(edge_index: Tensor, n: int) -> Tensor:
    """``edge_index`` (2, E) with an edge ``i -> i`` appended for every node: (2, E + N)."""
    loops = torch.arange(n, dtype=edge_index.dtype, device=edge_index.device)
    return torch.cat([edge_index, torch.stack([loops, loops])], dim=1)


def index_mask(indices, n: int) -> Tensor:
    """(N,) bool, True at ``indices``."""
    mask = torch.zeros(n, dtype=torch.bool)
    mask[torch.as_tensor(np.asarray(indices, np.int64))] = True
    return mask


def neighbourhood(
    edge_index: Tensor, node: int, num_nodes: int, hops: int = 2
) -> tuple[Tensor, Tensor, Tensor]:
    """The nodes within ``hops`` of ``node`` along incoming edges, their distance, and the
    positions in ``edge_index`` of the edges between them that lead towards ``node`` (from a
    node as far or farther, self-loops included; none into the outer ring): ``(M,)``, ``(M,)``,
    ``(K,)``; the nodes sorted by distance, ``node`` first."""
    src, dst = edge_index[0], edge_index[1]
    hop_of = torch.full((num_nodes,), hops + 1, dtype=torch.long)
    hop_of[node] = 0
    frontier = torch.tensor([node], dtype=torch.long)
    for hop in range(1, hops + 1):
        found = torch.unique(src[torch.isin(dst, frontier)])
        frontier = found[hop_of[found] > hops]
        hop_of[frontier] = hop
    nodes = torch.nonzero(hop_of <= hops).flatten()
    nodes = nodes[torch.argsort(hop_of[nodes] * num_nodes + nodes)]
    towards = (hop_of[dst] < hops) & (hop_of[src] <= hops) & (hop_of[src] >= hop_of[dst])
    return nodes, hop_of[nodes], torch.nonzero(towards).flatten()
