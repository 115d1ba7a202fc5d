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
  narrowest edge. Each row is then divided by its sum, as Abnar & Zuidema's code does, so that
  rows sum to 1 as rollout's do (``normalize=False``: the raw max-flow values, whose rows may sum
  to more than 1).

The encoder-decoder variant (:func:`cross_rollout`, :func:`cross_flow`) adds the decoder's
cross-attention on top: each output step t attends to the encoder's top layer with the weights
C[t] (the mean over decoder layers and heads), so its rollout over the source is C @ R and its
flow is the maximum flow from a node for step t, joined to the top encoder layer with
capacities C[t], down to each input token.

Flow costs a max-flow per cell of the map, each on a graph of L x S x S edges: about
:func:`flow_work` = T x S x L x S x S edge visits, some 10 microseconds each in networkx on a
laptop CPU (2 layers, 20 x 20 tokens: 3 s). Where maps are drawn for whoever asks (the explorer,
a report's examples), :func:`along_output` computes flow only up to a bound of that work
(:data:`FLOW_WORK`, about 2 s) and says why it did not beyond it; rollout is a few matrix
products and is always computed.

Shapes: L layers, H heads, S source positions, T output steps.
"""

from __future__ import annotations

import networkx as nx
import numpy as np
import torch
from networkx.algorithms.flow import build_residual_network, preflow_push
from torch import Tensor

from attnkit.data.vocab import BOS_ID, EOS

#: the most :func:`flow_work` spent on one map's attention flow where maps are drawn on demand
FLOW_WORK = 200_000


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


def _rows_to_one(values: np.ndarray) -> np.ndarray:
    """Each row divided by its sum (the reference's normalisation); a row of zeros (no path from
    that position to any input) stays zeros."""
    sums = values.sum(-1, keepdims=True)
    return np.divide(values, sums, out=np.zeros_like(values), where=sums > 0)


def flow(attention: Tensor, residual: bool = True, normalize: bool = True) -> Tensor:
    """(L, S, S) -> (S, S): row i the maximum flow from position i of the top layer to each input
    token, in the graph of the (residual) attention; each row summing to 1 (``normalize``, as
    Abnar & Zuidema's code), or the raw max-flow values."""
    layers = (with_residual(attention) if residual else attention).double().cpu().numpy()
    n_layers, s, _ = layers.shape
    graph = _layer_graph(layers)
    top = [(n_layers, i) for i in range(s)]
    values = _flows(graph, top, [(0, j) for j in range(s)])
    return torch.from_numpy(_rows_to_one(values) if normalize else values).float()


def cross_rollout(cross: Tensor, encoder: Tensor, residual: bool = True) -> Tensor:
    """cross (T, S) the decoder's cross-attention, encoder (L, S, S) its self-attention ->
    (T, S): each output step's rollout over the source tokens."""
    return cross.to(encoder.dtype) @ rollout(encoder, residual)


def cross_flow(
    cross: Tensor, encoder: Tensor, residual: bool = True, normalize: bool = True
) -> Tensor:
    """cross (T, S), encoder (L, S, S) -> (T, S): the maximum flow from each output step (a node
    joined to the top encoder layer with capacities ``cross[t]``) to each source token; each row
    summing to 1 (``normalize``), or the raw max-flow values."""
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
    values = _flows(graph, steps, [(0, j) for j in range(s)])
    return torch.from_numpy(_rows_to_one(values) if normalize else values).float()


def transformer_maps(
    model, src: Tensor, tgt_in: Tensor, encoder: bool = True, with_flow: bool = True
) -> dict[str, Tensor]:
    """One source (1, S) and its forced output's decoder inputs (1, T) through a Transformer ->
    {"attention": the cross-attention (T, S) (mean over decoder layers and heads),
    "rollout": (T, S), "flow": (T, S) (unless not ``with_flow``), "encoder_attention": (L, S, S)
    heads averaged, "cross_by_layer": (Ld, T, S) each decoder layer's cross-attention, heads
    averaged} and, with ``encoder``, "encoder_rollout": (S, S), "encoder_flow": (S, S)."""
    with torch.no_grad():
        lengths = torch.tensor([src.size(1)])
        _, cross = model(src, lengths, tgt_in, need_weights=True)  # (1, L, H, T, S)
        layers = model.encoder_attention(src)[0].mean(1).float().cpu()  # (L, S, S)
    by_layer = cross[0].mean(1).float().cpu()  # (Ld, T, S)
    cross = by_layer.mean(0)  # (T, S)
    maps = {
        "attention": cross,
        "rollout": cross_rollout(cross, layers),
        "encoder_attention": layers,
        "cross_by_layer": by_layer,
    }
    if with_flow:
        maps["flow"] = cross_flow(cross, layers)
    if encoder:
        maps["encoder_rollout"] = rollout(layers)
        maps["encoder_flow"] = flow(layers)
    return maps


def flow_work(layers: int, source: int, steps: int) -> int:
    """What the attention flow of a (steps x source) map through ``layers`` encoder layers costs:
    a max-flow per cell, each on a graph of layers x source x source edges."""
    return steps * source * layers * source * source


def along_output(
    model, src_ids: list[int], output_ids: list[int], ended: bool, max_work: int = FLOW_WORK
) -> tuple[dict[str, np.ndarray], str | None]:
    """A Transformer's rollout and flow of one source (token ids, "</s>" included) forced along
    an output it wrote (target ids, "</s>" left out; ``ended``: the output ended with it) ->
    ({"rollout": (T, S), "flow": (T, S)}, None), T = len(output_ids) + ended, the rows of the
    output's attention. Flow is left out when its :func:`flow_work` is above ``max_work``, and
    the second item says so in a line. Call it with the model in eval mode."""
    steps = len(output_ids) + int(ended)  # T
    if steps == 0:
        return {"rollout": np.zeros((0, len(src_ids))), "flow": np.zeros((0, len(src_ids)))}, None
    tgt_in = [BOS_ID, *output_ids][:steps]  # (T,): the decoder's inputs, teacher-forced
    device = next(model.parameters()).device
    src = torch.tensor([src_ids], dtype=torch.long, device=device)  # (1, S)
    tgt = torch.tensor([tgt_in], dtype=torch.long, device=device)  # (1, T)
    layers = len(model.encoder.layers)
    work = flow_work(layers, len(src_ids), steps)
    maps = transformer_maps(model, src, tgt, encoder=False, with_flow=work <= max_work)
    note = None
    if "flow" not in maps:
        note = (
            f"flow: not computed: it takes a max-flow for each of the map's {steps} x "
            f"{len(src_ids)} cells through {layers} layers ({work:,} steps of work), more than "
            f"the bound of {max_work:,}; rollout is shown, and a shorter input gets flow too"
        )
    return {k: maps[k].numpy() for k in ("rollout", "flow") if k in maps}, note


def along_tokens(
    translator, src_ids: list[int], output_tokens: list[str], max_work: int = FLOW_WORK
):
    """:func:`along_output` for an output as a translator writes it (its tokens, "</s>" last
    when it ended)."""
    ended = output_tokens[-1:] == [EOS]
    ids = translator.tgt_vocab.encode(output_tokens[:-1] if ended else output_tokens)
    return along_output(translator.model, src_ids, ids, ended, max_work)
