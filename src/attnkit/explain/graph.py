"""Explaining a graph model's prediction for one node: the attention it paid over its
neighbourhood, beside the gradient saliency of the same prediction over the neighbours' features
(captum's ``Saliency``), and how far the two agree.

:func:`explain_node` gathers the plain data (the two-hop neighbourhood, each attention layer's
weights on its edges per head, the saliency share of every node of it, the agreement);
:func:`neighbourhood_of` makes the picture's input from it; :func:`entropies` and
:func:`lookup_matrix` are the statistics the other pictures draw; :func:`training_figures` the
pictures TensorBoard gets during training.

Shapes: N nodes, E edges, H heads, M nodes of the neighbourhood, K its edges.
"""

from __future__ import annotations

import numpy as np
import torch
from captum.attr import Saliency

from attnkit.attention.graph import node_entropy
from attnkit.data.graph.graph_data import Graph, neighbourhood
from attnkit.viz.graph import Neighbourhood, entropy_figure, lookup_figure


def forward(model, data) -> tuple[torch.Tensor, list[torch.Tensor]]:
    """``(log_probs (N, C), [weights (E, H) per attention layer])`` in eval mode, no gradient."""
    model.eval()
    with torch.no_grad():
        return model(data.x, data.edge_index)


def _ranks(values: np.ndarray) -> np.ndarray:
    """Ranks with ties averaged (for Spearman's rho)."""
    order = np.argsort(values, kind="stable")
    ranks = np.empty(len(values))
    ranks[order] = np.arange(len(values))
    for value in np.unique(values):
        tied = values == value
        ranks[tied] = ranks[tied].mean()
    return ranks


def rank_correlation(a: np.ndarray, b: np.ndarray) -> float | None:
    """Spearman's rho of two vectors (None where either is constant or shorter than 2)."""
    if len(a) < 2:
        return None
    ra, rb = _ranks(np.asarray(a, float)), _ranks(np.asarray(b, float))
    if ra.std() == 0 or rb.std() == 0:
        return None
    return float(np.corrcoef(ra, rb)[0, 1])


def saliency(model, data, node: int, target: int) -> np.ndarray:
    """(N,) the L2 norm over each node's features of d log p(target | node) / d x (captum)."""
    model.eval()

    def score(x):
        return model(x, data.edge_index)[0][node : node + 1]

    x = data.x.to_dense() if data.x.is_sparse else data.x
    grads = Saliency(score).attribute(x.clone().requires_grad_(True), target=target, abs=True)
    return grads.norm(dim=1).detach().cpu().numpy()


def explain_node(model, graph: Graph, data, node: int, hops: int = 2) -> dict:
    """Everything known of ``node``'s prediction, as plain data (numpy arrays, lists)."""
    log_probs, layers = forward(model, data)
    nodes, hop, edge_pos = neighbourhood(data.edge_index.cpu(), node, graph.num_nodes, hops)
    local = {int(n): i for i, n in enumerate(nodes.tolist())}
    edges = data.edge_index.cpu()[:, edge_pos]
    pairs = np.array([[local[int(s)], local[int(t)]] for s, t in edges.T.tolist()]).reshape(-1, 2)
    weights = [w.cpu()[edge_pos].numpy() for w in layers]  # per layer (K, H)
    probs = log_probs[node].exp().cpu().numpy()
    predicted = int(probs.argmax())
    share = saliency(model, data, node, predicted)[nodes.numpy()]
    share = share / max(float(share.sum()), 1e-30)  # (M,) over the neighbourhood
    into = np.flatnonzero(pairs[:, 1] == 0) if len(pairs) else np.zeros(0, int)
    direct = pairs[into, 0] if len(into) else np.zeros(0, int)
    attention = weights[-1][into].mean(1) if weights else None
    agreement = None
    if attention is not None:
        agreement = {
            "rank_correlation": rank_correlation(attention, share[direct]),
            "same_top_neighbour": bool(
                len(direct) and attention.argmax() == share[direct].argmax()
            ),
        }
    return {
        "node": node,
        "nodes": nodes.numpy(),
        "hops": hop.numpy(),
        "edges": pairs,
        "weights": weights,
        "probs": probs,
        "predicted": predicted,
        "saliency": share,
        "direct": direct,
        "attention_into": attention,
        "agreement": agreement,
    }


def neighbourhood_of(graph: Graph, found: dict, layer: int = -1) -> Neighbourhood:
    """The picture's input for :func:`explain_node`'s result (attention of ``layer``)."""
    nodes = found["nodes"]
    label = int(graph.y[found["node"]])
    return Neighbourhood(
        names=[graph.nodes[int(n)] for n in nodes],
        classes=graph.y[torch.as_tensor(nodes)].numpy(),
        class_names=graph.classes,
        hops=found["hops"],
        edges=found["edges"],
        weights=found["weights"][layer] if found["weights"] else None,
        true=graph.classes[label] if label >= 0 else "-",
        predicted=graph.classes[found["predicted"]],
    )


def entropies(model, data, layer: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Per node that attends to any (an incoming edge), and head, the entropy of attention layer
    ``layer``, and ``log(degree)``: ``((N', H), (N',))``."""
    _, layers = forward(model, data)
    n, targets = data.x.shape[0], data.edge_index[1]
    entropy, uniform = node_entropy(layers[layer], targets, n)
    attends = torch.zeros(n, dtype=torch.bool, device=targets.device)
    attends[targets] = True
    return entropy[attends].cpu().numpy(), uniform[attends].cpu().numpy()


def lookup_matrix(model, graph: Graph, data, number: int, layer: int = 0) -> np.ndarray:
    """DictionaryLookup: the (k, k) attention of graph ``number``'s queries (rows, by attribute)
    over its keys (columns, by attribute), mean of the heads."""
    _, layers = forward(model, data)
    src, dst = data.edge_index.cpu()
    part, attribute = graph.extra["graph"], graph.extra["attribute"]
    k = len(graph.classes)
    inside = (part[src] == number) & graph.extra["query"][dst] & ~graph.extra["query"][src]
    matrix = np.zeros((k, k))
    weights = layers[layer].cpu().mean(1)[inside].numpy()
    matrix[attribute[dst[inside]].numpy(), attribute[src[inside]].numpy()] = weights
    return matrix


def training_figures(model, graph: Graph, data) -> list:
    """(tag, figure) pairs for TensorBoard: the first layer's attention entropy against
    uniform, and for DictionaryLookup the query x key matrix of the first test graph."""
    if not model.has_attention:
        return []
    was_training = model.training
    try:
        figures = [("graph/entropy", entropy_figure(*entropies(model, data)))]
        if "graph" in graph.extra:
            first = int(graph.extra["graph"][graph.masks["test"]].min())
            matrix = lookup_matrix(model, graph, data, first)
            figures.append(("graph/lookup", lookup_figure([("query x key", matrix)])))
        return figures
    finally:
        model.train(was_training)
