"""Node classifiers over a graph: GAT, GATv2, constant attention (Const-GAT) and GCN.

The GAT recipe (Velickovic et al. 2018) on Cora: dropout on the input, one hidden layer of 8
heads x 8 features (concatenated, ELU), dropout, an output layer of 1 head over the classes
(averaged where it has several). ``model.attention`` picks the layer's attention
(:data:`attnkit.attention.graph.GRAPH_ATTENTION`: ``gat``, ``gatv2``, ``none``);
``model.type: gcn`` swaps every layer for a graph convolution (Kipf & Welling 2017), the
non-attention reference. ``readout: linear`` ends in a linear layer over the last hidden layer
instead (the DictionaryLookup models of Brody et al. 2022).

Shapes: N nodes, E edges, D input width, C classes, H heads, L layers.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from attnkit.attention.graph import GRAPH_ATTENTION, GraphAttention, feature_dropout, project
from attnkit.config import above, at_least, between, check_values


@dataclass
class GraphModelConfig:
    """``model:`` of a ``family: graph`` experiment."""

    type: str = "gat"
    """gat (attention layers, model.attention picks which) or gcn (graph convolutions)."""
    attention: str = "gat"
    """gat (static, Velickovic et al. 2018), gatv2 (dynamic, Brody et al. 2022) or none
    (constant: every neighbour weighs 1/degree, the GAT paper's Const-GAT); type gat only."""
    hidden: int = 8
    """Features per head of each hidden layer (gcn: the hidden width is hidden x heads)."""
    heads: int = 8
    """Attention heads of each hidden layer, concatenated."""
    layers: int = 1
    """Hidden layers before the readout."""
    output_heads: int = 1
    """Heads of the output attention layer, averaged (readout: attention)."""
    readout: str = "attention"
    """attention: the last layer is a graph layer over the classes; linear: a linear layer."""
    dropout: float = 0.6
    """Dropout on each layer's input features."""
    attention_dropout: float = 0.6
    """Dropout on the attention weights while training."""
    negative_slope: float = 0.2
    """Slope of the LeakyReLU in the attention scores."""
    self_loops: bool = True
    """Add an edge from every node to itself (each node attends to itself too)."""

    CHOICES = {
        "type": ("gat", "gcn"),
        "attention": tuple(GRAPH_ATTENTION),
        "readout": ("attention", "linear"),
    }
    RULES = {
        "hidden": at_least(1),
        "heads": at_least(1),
        "layers": at_least(0),
        "output_heads": at_least(1),
        "dropout": between(0, 1),
        "attention_dropout": between(0, 1),
        "negative_slope": above(0),
    }

    def validate(self, where: str) -> None:
        check_values(self, where, self.RULES)


class GCNLayer(nn.Module):
    """``out_i = sum_j A_ij W h_j + b`` with ``A = D^-1/2 A D^-1/2`` over the given edges (their
    self-loops included), degrees counted at the targets. Returns ``(out (N, F), None)``."""

    def __init__(self, in_dim: int, out_dim: int):
        super().__init__()
        self.lin = nn.Linear(in_dim, out_dim, bias=False)
        self.bias = nn.Parameter(torch.zeros(out_dim))
        nn.init.xavier_uniform_(self.lin.weight)

    def forward(self, x: Tensor, edge_index: Tensor) -> tuple[Tensor, None]:
        src, dst = edge_index[0], edge_index[1]
        n = x.size(0)
        h = project(self.lin, x)  # (N, F)
        degree = h.new_zeros(n).index_add_(0, dst, h.new_ones(dst.numel()))
        scale = degree.clamp_min(1).rsqrt()
        norm = (scale.index_select(0, src) * scale.index_select(0, dst)).unsqueeze(-1)  # (E, 1)
        out = h.new_zeros(n, h.size(1)).index_add_(0, dst, h.index_select(0, src) * norm)
        return out + self.bias, None


def _layer(m: GraphModelConfig, in_dim: int, out_dim: int, heads: int, concat: bool) -> nn.Module:
    if m.type == "gcn":
        return GCNLayer(in_dim, out_dim * heads if concat else out_dim)
    return GraphAttention(
        m.attention, in_dim, out_dim, heads, concat, m.attention_dropout, m.negative_slope
    )


class GraphNet(nn.Module):
    """``forward(x (N, D), edge_index (2, E)) -> (log_probs (N, C), weights)``: ``weights`` is a
    list with each attention layer's (E, H) edge weights (empty for GCN). ``x`` may be a sparse
    COO tensor (:func:`attnkit.attention.graph.project`)."""

    def __init__(self, m: GraphModelConfig, in_dim: int, classes: int):
        super().__init__()
        self.config = m
        self.layers = nn.ModuleList()
        width = in_dim
        for _ in range(m.layers):
            self.layers.append(_layer(m, width, m.hidden, m.heads, concat=True))
            width = m.hidden * m.heads
        if m.readout == "attention":
            self.layers.append(_layer(m, width, classes, m.output_heads, concat=False))
            self.readout = None
        else:
            self.readout = nn.Linear(width, classes)

    @property
    def has_attention(self) -> bool:
        return self.config.type != "gcn"

    def forward(self, x: Tensor, edge_index: Tensor) -> tuple[Tensor, list[Tensor]]:
        weights = []
        last = len(self.layers) - 1
        for index, layer in enumerate(self.layers):
            x = feature_dropout(x, self.config.dropout, self.training)
            x, w = layer(x, edge_index)
            if w is not None:
                weights.append(w)
            if index < last or self.readout is not None:
                x = F.elu(x)
        if self.readout is not None:
            x = self.readout(F.dropout(x, self.config.dropout, self.training))
        return F.log_softmax(x, dim=-1), weights
