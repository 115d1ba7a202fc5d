"""Attention over a graph's edges: GAT, GATv2 and constant (uniform) attention.

Each node ``i`` attends over the nodes ``j`` with an edge ``j -> i`` (its neighbours, a self-loop
included where the graph has one). The scores of the edges into one node are turned into weights
by :func:`segment_softmax`, a softmax per target node over a flat list of edges with the
segment's maximum subtracted first (as PyTorch Geometric's ``utils.softmax``); no dense N x N
mask is ever built.

- ``gat`` (Velickovic et al., ICLR 2018): ``e_ij = LeakyReLU(a_dst . W h_i + a_src . W h_j)``.
  The ranking of the neighbours is the same for every query node: *static* attention.
- ``gatv2`` (Brody, Alon & Yahav, ICLR 2022): ``e_ij = a . LeakyReLU(W_dst h_i + W_src h_j)``,
  the nonlinearity before ``a``: *dynamic* attention.
- ``none``: every neighbour weighs ``1 / deg(i)`` (the GAT paper's Const-GAT ablation).

Shapes: N nodes, E edges, H heads, D input width, F features per head. ``edge_index`` is
``(2, E)``: row 0 the source ``j``, row 1 the target ``i`` whose softmax the edge belongs to.
Every layer returns ``(out, weights)``: ``out`` (N, H * F) concatenated or (N, F) averaged over
the heads, ``weights`` (E, H) the attention of each edge in each head (before attention
dropout, so they sum to 1 over the edges into every node that has any).
"""

from __future__ import annotations

from collections.abc import Callable

import torch
import torch.nn.functional as F
from torch import Tensor, nn


def segment_softmax(scores: Tensor, index: Tensor, num_nodes: int) -> Tensor:
    """Softmax of ``scores`` (E, ...) over the edges that share a target ``index`` (E,).

    Each segment's maximum is subtracted before ``exp`` (no overflow for large scores); a node
    with no incoming edge has no weights at all (nothing to divide by zero). Returns weights of
    the shape of ``scores`` that sum to 1 over every non-empty segment.
    """
    shape = (num_nodes, *scores.shape[1:])
    expanded = index.view(-1, *([1] * (scores.dim() - 1))).expand_as(scores)
    peak = scores.new_full(shape, float("-inf"))
    peak = peak.scatter_reduce(0, expanded, scores.detach(), reduce="amax", include_self=True)
    shifted = (scores - peak.index_select(0, index)).exp()
    total = scores.new_zeros(shape).index_add_(0, index, shifted)
    return shifted / total.index_select(0, index).clamp_min(torch.finfo(scores.dtype).tiny)


def project(lin: nn.Linear, x: Tensor) -> Tensor:
    """``lin(x)`` for a dense ``x`` (N, D), or for a sparse COO one (bag-of-words features are
    mostly zeros: ``torch.sparse.mm`` skips them)."""
    if not x.is_sparse:
        return lin(x)
    out = torch.sparse.mm(x, lin.weight.t())
    return out if lin.bias is None else out + lin.bias


def feature_dropout(x: Tensor, p: float, training: bool) -> Tensor:
    """Dropout of a dense or sparse COO ``x`` (a sparse one: of its stored values only, which is
    the same, as a zero stays zero)."""
    if not x.is_sparse:
        return F.dropout(x, p, training)
    if not training or p == 0:
        return x
    x = x.coalesce()
    values = F.dropout(x.values(), p, True)
    return torch.sparse_coo_tensor(
        x.indices(), values, x.shape, is_coalesced=True, check_invariants=False
    )


def _glorot(tensor: Tensor) -> None:
    """Glorot-uniform over the last two dims (PyG's ``glorot`` for a (1, H, F) vector too)."""
    fan = tensor.size(-2) + tensor.size(-1)
    bound = (6.0 / fan) ** 0.5
    nn.init.uniform_(tensor, -bound, bound)


class _Scorer(nn.Module):
    """Projects the nodes and scores the edges: ``(messages (N, H, F), scores (E, H))``."""

    def __init__(self, in_dim: int, out_dim: int, heads: int, negative_slope: float):
        super().__init__()
        self.heads, self.out_dim, self.negative_slope = heads, out_dim, negative_slope

    def forward(self, x: Tensor, src: Tensor, dst: Tensor) -> tuple[Tensor, Tensor]:
        raise NotImplementedError


class GATScorer(_Scorer):
    """``e_ij = LeakyReLU(a_src . W h_j + a_dst . W h_i)``, one ``W`` (PyG GATConv's ``lin``)."""

    def __init__(self, in_dim: int, out_dim: int, heads: int, negative_slope: float):
        super().__init__(in_dim, out_dim, heads, negative_slope)
        self.lin = nn.Linear(in_dim, heads * out_dim, bias=False)
        self.att_src = nn.Parameter(torch.empty(1, heads, out_dim))
        self.att_dst = nn.Parameter(torch.empty(1, heads, out_dim))
        _glorot(self.lin.weight)
        _glorot(self.att_src)
        _glorot(self.att_dst)

    def forward(self, x: Tensor, src: Tensor, dst: Tensor) -> tuple[Tensor, Tensor]:
        h = project(self.lin, x).view(-1, self.heads, self.out_dim)  # (N, H, F)
        alpha_src = (h * self.att_src).sum(-1)  # (N, H)
        alpha_dst = (h * self.att_dst).sum(-1)  # (N, H)
        scores = alpha_src.index_select(0, src) + alpha_dst.index_select(0, dst)  # (E, H)
        return h, F.leaky_relu(scores, self.negative_slope)


class GATv2Scorer(_Scorer):
    """``e_ij = a . LeakyReLU(W_src h_j + W_dst h_i)`` (PyG GATv2Conv, ``share_weights=False``:
    ``lin_l`` the sources, whose projections are also the messages, ``lin_r`` the targets)."""

    def __init__(self, in_dim: int, out_dim: int, heads: int, negative_slope: float):
        super().__init__(in_dim, out_dim, heads, negative_slope)
        self.lin_l = nn.Linear(in_dim, heads * out_dim)
        self.lin_r = nn.Linear(in_dim, heads * out_dim)
        self.att = nn.Parameter(torch.empty(1, heads, out_dim))
        for lin in (self.lin_l, self.lin_r):
            _glorot(lin.weight)
            nn.init.zeros_(lin.bias)
        _glorot(self.att)

    def forward(self, x: Tensor, src: Tensor, dst: Tensor) -> tuple[Tensor, Tensor]:
        h_l = project(self.lin_l, x).view(-1, self.heads, self.out_dim)  # (N, H, F)
        h_r = project(self.lin_r, x).view(-1, self.heads, self.out_dim)  # (N, H, F)
        mixed = h_l.index_select(0, src) + h_r.index_select(0, dst)  # (E, H, F)
        scores = (F.leaky_relu(mixed, self.negative_slope) * self.att).sum(-1)  # (E, H)
        return h_l, scores


class ConstantScorer(_Scorer):
    """Every edge scores 0, so each neighbour of ``i`` weighs ``1 / deg(i)`` (Const-GAT)."""

    def __init__(self, in_dim: int, out_dim: int, heads: int, negative_slope: float):
        super().__init__(in_dim, out_dim, heads, negative_slope)
        self.lin = nn.Linear(in_dim, heads * out_dim, bias=False)
        _glorot(self.lin.weight)

    def forward(self, x: Tensor, src: Tensor, dst: Tensor) -> tuple[Tensor, Tensor]:
        h = project(self.lin, x).view(-1, self.heads, self.out_dim)  # (N, H, F)
        return h, h.new_zeros(src.numel(), self.heads)


#: ``model.attention`` -> the scorer of a graph attention layer
GRAPH_ATTENTION: dict[str, Callable[..., _Scorer]] = {
    "gat": GATScorer,
    "gatv2": GATv2Scorer,
    "none": ConstantScorer,
}


class GraphAttention(nn.Module):
    """One multi-head graph attention layer over an edge list; returns ``(out, weights)``.

    ``concat``: the heads' outputs side by side (N, H * F), else their mean (N, F); a bias is
    added after either. ``dropout``: on the attention weights while training (GAT's 0.6).
    """

    def __init__(
        self,
        kind: str,
        in_dim: int,
        out_dim: int,
        heads: int = 1,
        concat: bool = True,
        dropout: float = 0.0,
        negative_slope: float = 0.2,
    ):
        super().__init__()
        self.kind, self.heads, self.out_dim, self.concat = kind, heads, out_dim, concat
        self.scorer = GRAPH_ATTENTION[kind](in_dim, out_dim, heads, negative_slope)
        self.dropout = dropout
        self.bias = nn.Parameter(torch.zeros(heads * out_dim if concat else out_dim))

    def forward(self, x: Tensor, edge_index: Tensor) -> tuple[Tensor, Tensor]:
        """``x`` (N, D), ``edge_index`` (2, E) -> ``out`` (N, H*F or F), ``weights`` (E, H)."""
        src, dst = edge_index[0], edge_index[1]
        n = x.size(0)
        messages, scores = self.scorer(x, src, dst)  # (N, H, F), (E, H)
        weights = segment_softmax(scores, dst, n)  # (E, H)
        dropped = F.dropout(weights, self.dropout, self.training)
        weighted = messages.index_select(0, src) * dropped.unsqueeze(-1)  # (E, H, F)
        out = messages.new_zeros(n, self.heads, self.out_dim).index_add_(0, dst, weighted)
        out = out.reshape(n, -1) if self.concat else out.mean(1)  # (N, H*F) or (N, F)
        return out + self.bias, weights


def node_entropy(weights: Tensor, index: Tensor, num_nodes: int) -> tuple[Tensor, Tensor]:
    """Per node and head, the entropy of its attention (nats), and the entropy of uniform
    attention over its in-degree, ``log(deg)``: ``((N, H), (N,))``. Constant attention has
    entropy ``log(deg)`` exactly; the further below, the more a head picks among neighbours."""
    terms = -(weights * weights.clamp_min(1e-30).log())  # (E, H)
    entropy = weights.new_zeros(num_nodes, weights.size(1)).index_add_(0, index, terms)
    degree = weights.new_zeros(num_nodes).index_add_(0, index, weights.new_ones(index.numel()))
    return entropy, degree.clamp_min(1).log()
