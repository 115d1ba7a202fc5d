"""Graph attention: the segment softmax, the GAT / GATv2 / constant layers, the models, and
their equality with PyTorch Geometric's GATConv / GATv2Conv on shared weights."""

from __future__ import annotations

import pytest
import torch

from attnkit.attention.graph import (
    GraphAttention,
    feature_dropout,
    node_entropy,
    segment_softmax,
)
from attnkit.data.graph.graph_data import undirected, with_self_loops
from attnkit.models.graph import GraphModelConfig, GraphNet


def _random_graph(n: int = 12, edges: int = 30, seed: int = 0) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    rows = torch.randint(0, n, (edges,), generator=g).numpy()
    cols = torch.randint(0, n, (edges,), generator=g).numpy()
    return with_self_loops(undirected(rows, cols, n), n)


def test_segment_softmax_sums_to_one_per_target_and_leaves_isolated_nodes_empty():
    index = torch.tensor([0, 0, 0, 2, 2, 4])  # nodes 1 and 3 have no incoming edge
    scores = torch.randn(6, 3, dtype=torch.float64)
    weights = segment_softmax(scores, index, 5)
    sums = torch.zeros(5, 3, dtype=torch.float64).index_add_(0, index, weights)
    assert torch.allclose(sums[[0, 2, 4]], torch.ones(3, 3, dtype=torch.float64))
    assert torch.equal(sums[[1, 3]], torch.zeros(2, 3, dtype=torch.float64))
    expected = torch.softmax(scores[:3], dim=0)  # one segment is an ordinary softmax
    assert torch.allclose(weights[:3], expected)


def test_segment_softmax_subtracts_the_maximum_so_huge_scores_stay_finite():
    index = torch.tensor([0, 0, 1, 1])
    scores = torch.tensor([[1000.0], [999.0], [-1000.0], [-1002.0]])
    weights = segment_softmax(scores, index, 2)
    assert torch.isfinite(weights).all()
    assert torch.allclose(weights[:2, 0], torch.softmax(torch.tensor([1.0, 0.0]), 0))
    assert torch.allclose(weights[2:, 0], torch.softmax(torch.tensor([2.0, 0.0]), 0))


def test_segment_softmax_gradient_matches_a_dense_masked_softmax():
    edge_index = _random_graph()
    n = 12
    scores = torch.randn(edge_index.shape[1], dtype=torch.float64, requires_grad=True)
    weights = segment_softmax(scores, edge_index[1], n)
    dense = torch.full((n, n), float("-inf"), dtype=torch.float64)
    dense = dense.index_put((edge_index[1], edge_index[0]), scores)
    expected = torch.softmax(dense, dim=1)[edge_index[1], edge_index[0]]
    assert torch.allclose(weights, expected)
    g1 = torch.autograd.grad((weights * torch.arange(len(scores))).sum(), scores)[0]
    g2 = torch.autograd.grad((expected * torch.arange(len(scores))).sum(), scores)[0]
    assert torch.allclose(g1, g2)


@pytest.mark.parametrize("kind", ["gat", "gatv2", "none"])
@pytest.mark.parametrize("concat", [True, False])
def test_layer_shapes_and_weights_per_edge_and_head(kind, concat):
    edge_index = _random_graph()
    layer = GraphAttention(kind, 5, 4, heads=3, concat=concat).eval()
    out, weights = layer(torch.randn(12, 5), edge_index)
    assert out.shape == (12, 12 if concat else 4)
    assert weights.shape == (edge_index.shape[1], 3)
    sums = torch.zeros(12, 3).index_add_(0, edge_index[1], weights)
    assert torch.allclose(sums, torch.ones(12, 3), atol=1e-6)


def test_constant_attention_is_uniform_over_the_in_degree():
    edge_index = _random_graph(seed=3)
    _, weights = GraphAttention("none", 5, 4, heads=2).eval()(torch.randn(12, 5), edge_index)
    degree = torch.zeros(12).index_add_(0, edge_index[1], torch.ones(edge_index.shape[1]))
    assert torch.allclose(weights[:, 0], 1 / degree[edge_index[1]])
    entropy, uniform = node_entropy(weights, edge_index[1], 12)
    assert torch.allclose(entropy[:, 0], uniform, atol=1e-6)


def test_gat_ranks_neighbours_the_same_for_every_query_and_gatv2_need_not():
    """Brody et al.'s point: GAT's attention is static. Two queries over the same three keys."""
    torch.manual_seed(0)
    keys = torch.randn(3, 4)
    queries = torch.randn(2, 4) * 3
    x = torch.cat([keys, queries])
    src = torch.tensor([0, 1, 2, 0, 1, 2])
    dst = torch.tensor([3, 3, 3, 4, 4, 4])
    edge_index = torch.stack([src, dst])
    gat = GraphAttention("gat", 4, 8).eval()
    _, w = gat(x, edge_index)
    assert torch.equal(w[:3, 0].argsort(), w[3:, 0].argsort())
    differ = 0
    for seed in range(20):
        torch.manual_seed(seed)
        _, w2 = GraphAttention("gatv2", 4, 8).eval()(x, edge_index)
        differ += int(not torch.equal(w2[:3, 0].argsort(), w2[3:, 0].argsort()))
    assert differ > 0


@pytest.mark.parametrize("kind", ["gat", "gcn"])
@pytest.mark.parametrize("readout", ["attention", "linear"])
def test_models_give_log_probabilities_and_one_weight_tensor_per_attention_layer(kind, readout):
    m = GraphModelConfig(type=kind, hidden=4, heads=2, layers=2, readout=readout)
    net = GraphNet(m, 6, 3).eval()
    edge_index = _random_graph()
    log_probs, weights = net(torch.randn(12, 6), edge_index)
    assert log_probs.shape == (12, 3)
    assert torch.allclose(log_probs.exp().sum(-1), torch.ones(12), atol=1e-5)
    attention_layers = 0 if kind == "gcn" else (3 if readout == "attention" else 2)
    assert len(weights) == attention_layers


def _pyg():
    try:
        from torch_geometric import nn as pyg_nn
    except ImportError:
        pytest.skip("torch_geometric is not installed (pip install torch_geometric: test extra)")
    return pyg_nn


@pytest.mark.parametrize("heads,concat", [(1, True), (4, True), (3, False)])
def test_gat_equals_pyg_gatconv_on_shared_weights(heads, concat):
    pyg_nn = _pyg()
    torch.manual_seed(0)
    x = torch.randn(12, 7, dtype=torch.float64)
    edge_index = undirected(*torch.randint(0, 12, (2, 30)).numpy(), 12)
    ours = GraphAttention("gat", 7, 5, heads, concat).double().eval()
    theirs = pyg_nn.GATConv(7, 5, heads, concat=concat, add_self_loops=True).double().eval()
    with torch.no_grad():
        theirs.lin.weight.copy_(ours.scorer.lin.weight)
        theirs.att_src.copy_(ours.scorer.att_src)
        theirs.att_dst.copy_(ours.scorer.att_dst)
        ours.bias.copy_(torch.randn_like(ours.bias))
        theirs.bias.copy_(ours.bias)
    out, weights = ours(x, with_self_loops(edge_index, 12))
    ref, (ref_edges, ref_weights) = theirs(x, edge_index, return_attention_weights=True)
    assert torch.allclose(out, ref, atol=1e-12)
    ours_by_edge = dict(zip(map(tuple, with_self_loops(edge_index, 12).T.tolist()), weights))
    for (s, t), w in zip(map(tuple, ref_edges.T.tolist()), ref_weights, strict=True):
        assert torch.allclose(ours_by_edge[(s, t)], w, atol=1e-12)


@pytest.mark.parametrize("heads,concat", [(1, True), (4, True), (3, False)])
def test_gatv2_equals_pyg_gatv2conv_on_shared_weights(heads, concat):
    pyg_nn = _pyg()
    torch.manual_seed(1)
    x = torch.randn(12, 7, dtype=torch.float64)
    edge_index = undirected(*torch.randint(0, 12, (2, 30)).numpy(), 12)
    ours = GraphAttention("gatv2", 7, 5, heads, concat).double().eval()
    theirs = pyg_nn.GATv2Conv(7, 5, heads, concat=concat, add_self_loops=True).double().eval()
    with torch.no_grad():
        for name in ("lin_l", "lin_r"):
            getattr(theirs, name).weight.copy_(getattr(ours.scorer, name).weight)
            getattr(theirs, name).bias.copy_(torch.randn_like(getattr(ours.scorer, name).bias))
            getattr(ours.scorer, name).bias.copy_(getattr(theirs, name).bias)
        theirs.att.copy_(ours.scorer.att)
        ours.bias.copy_(torch.randn_like(ours.bias))
        theirs.bias.copy_(ours.bias)
    out, weights = ours(x, with_self_loops(edge_index, 12))
    ref, (ref_edges, ref_weights) = theirs(x, edge_index, return_attention_weights=True)
    assert torch.allclose(out, ref, atol=1e-12)
    ours_by_edge = dict(zip(map(tuple, with_self_loops(edge_index, 12).T.tolist()), weights))
    for (s, t), w in zip(map(tuple, ref_edges.T.tolist()), ref_weights, strict=True):
        assert torch.allclose(ours_by_edge[(s, t)], w, atol=1e-12)


@pytest.mark.parametrize("kind", ["gat", "gcn"])
def test_sparse_features_give_the_dense_result(kind):
    torch.manual_seed(0)
    x = torch.rand(12, 20) * (torch.rand(12, 20) < 0.1)
    net = GraphNet(GraphModelConfig(type=kind, hidden=4, heads=2), 20, 3).eval()
    edge_index = _random_graph()
    dense, _ = net(x, edge_index)
    sparse, _ = net(x.to_sparse().coalesce(), edge_index)
    assert torch.allclose(dense, sparse, atol=1e-6)
    net.train()  # dropout of the stored values only: what survives is scaled as dense dropout
    torch.manual_seed(1)
    dropped = feature_dropout(x.to_sparse(), 0.5, True)
    kept = dropped.to_dense()[x != 0]
    assert set(torch.unique(kept / x[x != 0]).round(decimals=4).tolist()) <= {0.0, 2.0}
