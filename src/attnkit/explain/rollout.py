"""Attention rollout and attention flow (Abnar & Zuidema 2020): how much each input token reaches
each position of a Transformer's upper layers, through all the layers' attention at once.

Raw attention of one layer says where that layer looked, not where the information it read came
from: by layer 3 a position has already mixed its neighbours. Both methods treat the layers as a
graph whose edges are the attention weights, the heads averaged, and the residual connection
added as an edge of weight 0.5 from every position to itself: A~ = 0.5 A + 0.5 I, each row
renormalised (:func:`with_residual`).

* **rollout** multiplies the layers' matrices: R = A~_L ... A~_1, so R[i, j] sums, over every
  path from input j up to position i, the product of its edges (:func:`rollout`);
* **flow** treats the edges as pipe capacities and takes the maximum flow from position i of the
  top layer to input j (networkx's max-flow, :func:`flow`): a path gives no more than its
  narrowest edge.

The encoder-decoder variant (:func:`cross_rollout`, :func:`cross_flow`) adds the decoder's
cross-attention on top: each output step t attends to the encoder's top layer with the weights
C[t] (the mean over decoder layers and heads), so its rollout over the source is C @ R and its
flow is the maximum flow from a node for step t, joined to the top encoder layer with
capacities C[t], down to each input token.

Shapes: L layers, H heads, S source positions, T output steps.
"""

from __future__ import annotations

import networkx as nx
import numpy as np
import torch
from networkx.algorithms.flow import build_residual_network, preflow_push
from torch import Tensor


def with_residual(attention: Tensor) -> Tensor:
    """(L, S, S) head-averaged attention -> 0.5 A + 0.5 I, rows renormalised."""
    eye = torch.eye(attention.size(-1), dtype=attention.dtype, device=attention.device)
    mixed = 0.5 * attention + 0.5 * eye
    return mixed / mixed.sum(-1, keepdim=True)


def rollout(attention: Tensor, residual: bool = True) -> Tensor:
    """(L, S, S) (rows = queries, layer 0 the lowest) -> (S, S): row i how much position i of the
    top layer draws from each input token; rows sum to 1."""
    layers = with_residual(attention) if residual else attention
    out = layers[0]
    for a in layers[1:]:
        out = a @ out
    return out


def rollout_by_layer(attention: Tensor, residual: bool = True) -> Tensor:
    """(L, S, S) -> (L, S, S): the rollout up to each layer (layer l: A~_l ... A~_1)."""
    layers = with_residual(attention) if residual else attention
    out, acc = [], None
    for a in layers:
        acc = a if acc is None else a @ acc
        out.append(acc)
    return torch.stack(out)


def _layer_graph(layers: np.ndarray) -> nx.DiGraph:
    """The layered graph: node (l, i) for layer l = 0 (inputs) .. L, an edge (l+1, i) -> (l, j)
    of capacity layers[l][i, j]."""
    graph = nx.DiGraph()
    n_layers, s, _ = layers.shape
    for layer in range(n_layers):
        for i in range(s):
            for j in range(s):
                if layers[layer, i, j] > 0:
                    graph.add_edge((layer + 1, i), (layer, j), capacity=float(layers[layer, i, j]))
    return graph


def _flows(graph: nx.DiGraph, sources: list, sinks: list) -> np.ndarray:
    """(len(sources), len(sinks)) maximum flow values (0 where no path joins them), by
    preflow-push on one residual network built once for all pairs."""
    out = np.zeros((len(sources), len(sinks)))
    residual = build_residual_network(graph, "capacity")
    for a, source in enumerate(sources):
        for b, sink in enumerate(sinks):
            if source in graph and sink in graph:
                found = preflow_push(graph, source, sink, residual=residual, value_only=True)
                out[a, b] = found.graph["flow_value"]
    return out


def flow(attention: Tensor, residual: bool = True) -> Tensor:
    """(L, S, S) -> (S, S): row i the maximum flow from position i of the top layer to each input
    token, in the graph of the (residual) attention."""
    layers = (with_residual(attention) if residual else attention).double().cpu().numpy()
    n_layers, s, _ = layers.shape
    graph = _layer_graph(layers)
    top = [(n_layers, i) for i in range(s)]
    return torch.from_numpy(_flows(graph, top, [(0, j) for j in range(s)])).float()


def cross_rollout(cross: Tensor, encoder: Tensor, residual: bool = True) -> Tensor:
    """cross (T, S) the decoder's cross-attention, encoder (L, S, S) its self-attention ->
    (T, S): each output step's rollout over the source tokens."""
    return cross.to(encoder.dtype) @ rollout(encoder, residual)


def cross_flow(cross: Tensor, encoder: Tensor, residual: bool = True) -> Tensor:
    """cross (T, S), encoder (L, S, S) -> (T, S): the maximum flow from each output step (a node
    joined to the top encoder layer with capacities ``cross[t]``) to each source token."""
    layers = (with_residual(encoder) if residual else encoder).double().cpu().numpy()
    n_layers, s, _ = layers.shape
    graph = _layer_graph(layers)
    weights = cross.double().cpu().numpy()
    steps = []
    for t in range(weights.shape[0]):
        step = ("step", t)
        for i in range(s):
            if weights[t, i] > 0:
                graph.add_edge(step, (n_layers, i), capacity=float(weights[t, i]))
        steps.append(step)
    return torch.from_numpy(_flows(graph, steps, [(0, j) for j in range(s)])).float()


def transformer_maps(model, src: Tensor, tgt_in: Tensor, encoder: bool = True) -> dict[str, Tensor]:
    """One source (1, S) and its forced output's decoder inputs (1, T) through a Transformer ->
    {"attention": the cross-attention (T, S) (mean over decoder layers and heads),
    "rollout": (T, S), "flow": (T, S), "encoder_attention": (L, S, S) heads averaged,
    "cross_by_layer": (Ld, T, S) each decoder layer's cross-attention, heads averaged} and, with
    ``encoder``, "encoder_rollout": (S, S), "encoder_flow": (S, S)."""
    with torch.no_grad():
        lengths = torch.tensor([src.size(1)])
        _, cross = model(src, lengths, tgt_in, need_weights=True)  # (1, L, H, T, S)
        layers = model.encoder_attention(src)[0].mean(1).float().cpu()  # (L, S, S)
    by_layer = cross[0].mean(1).float().cpu()  # (Ld, T, S)
    cross = by_layer.mean(0)  # (T, S)
    maps = {
        "attention": cross,
        "rollout": cross_rollout(cross, layers),
        "flow": cross_flow(cross, layers),
        "encoder_attention": layers,
        "cross_by_layer": by_layer,
    }
    if encoder:
        maps["encoder_rollout"] = rollout(layers)
        maps["encoder_flow"] = flow(layers)
    return maps
