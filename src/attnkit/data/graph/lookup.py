"""DictionaryLookup (Brody, Alon & Yahav, ICLR 2022, Section 4.1), generated.

Each small graph is a complete bipartite graph of ``k`` key nodes and ``k`` query nodes: key
``j`` holds an attribute ``a_j`` and a value ``v_j`` (both one of ``k``, each attribute and each
value once), query ``i`` holds only an attribute, and must answer the value of the key with the
same attribute. Every key has an edge to every query (queries attend over the keys). Node
features are one-hot: ``[attribute (k) | value (k)]``, the value block zero for queries. A
query's label is its answer; keys are unlabelled (-1).

The task needs *dynamic* attention: which key a query should look at depends on the query. GAT's
attention ranks the keys the same for every query, so it cannot fit even the training graphs;
GATv2 can. ``graphs`` graphs train, a tenth of that (at least 1) are dev and as many test.
"""

from __future__ import annotations

import numpy as np
import torch

from attnkit.data.graph.graph_data import Graph, index_mask


def _one(k: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Features (2k, 2k), labels (2k,) and attributes (2k,) of one graph: keys first."""
    attributes = np.concatenate([rng.permutation(k), rng.permutation(k)])
    values = rng.permutation(k)
    x = np.zeros((2 * k, 2 * k), np.float32)
    x[np.arange(2 * k), attributes] = 1.0
    x[np.arange(k), k + values] = 1.0
    value_of = np.empty(k, np.int64)
    value_of[attributes[:k]] = values
    labels = np.concatenate([np.full(k, -1), value_of[attributes[k:]]])
    return x, labels, attributes


def dictionary_lookup(k: int, graphs: int, seed: int = 0) -> Graph:
    """``graphs`` training graphs of ``k`` keys and ``k`` queries, and their dev and test graphs
    (``max(1, graphs // 10)`` each), as one :class:`Graph` of disjoint parts."""
    rng = np.random.default_rng(seed)
    held = max(1, graphs // 10)
    total = graphs + 2 * held
    parts = [_one(k, rng) for _ in range(total)]
    size = 2 * k
    x = np.concatenate([p[0] for p in parts])
    y = np.concatenate([p[1] for p in parts])
    attributes = np.concatenate([p[2] for p in parts])
    keys, queries = np.meshgrid(np.arange(k), np.arange(k, size), indexing="ij")
    offsets = np.arange(total)[:, None] * size
    src = (keys.reshape(1, -1) + offsets).reshape(-1)
    dst = (queries.reshape(1, -1) + offsets).reshape(-1)
    order = np.lexsort((src, dst))
    n = total * size
    graph_of = np.repeat(np.arange(total), size)
    is_query = np.tile(np.arange(size) >= k, total)
    masks = {}
    for split, (low, high) in {
        "train": (0, graphs),
        "dev": (graphs, graphs + held),
        "test": (graphs + held, total),
    }.items():
        masks[split] = index_mask(
            np.flatnonzero(is_query & (graph_of >= low) & (graph_of < high)), n
        )
    role = np.where(is_query, "query", "key")
    names = [f"g{g}/{r}{a}" for g, r, a in zip(graph_of, role, attributes, strict=True)]
    return Graph(
        name=f"dictionary_lookup_k{k}",
        x=torch.from_numpy(x),
        y=torch.from_numpy(y),
        edge_index=torch.from_numpy(np.stack([src[order], dst[order]])),
        masks=masks,
        classes=[str(v) for v in range(k)],
        nodes=names,
        extra={
            "attribute": torch.from_numpy(attributes.astype(np.int64)),
            "query": torch.from_numpy(is_query),
            "graph": torch.from_numpy(graph_of.astype(np.int64)),
        },
    )
