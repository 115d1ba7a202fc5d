"""The fused recurrent step of the decoder (backends ``fused``, ``native``, ``compile`` on a CPU).

Instead of calling ``nn.GRU``/``nn.LSTM`` once per step on [y_{t-1}; extra], the embedding half of
layer 0's input matmul is done for all T steps at once (:func:`project_inputs`), and each step is
one ``torch.gru_cell``/``lstm_cell`` per layer fed only ``extra``, the part that depends on the
previous step. The parameters are the RNN module's own, so both compute the same function
(tests/unit/test_equivalence.py). The hoisted projection enters layer 0 as a per-row input bias,
which CUDA's fused cells do not take (1-D biases only); there the backends step through the RNN
module instead (:func:`attnkit.accel.backend.resolve`).

Shapes: B batch, E embedding width, H hidden, G gates (3 GRU, 4 LSTM), L layers.
"""

from __future__ import annotations

from typing import Any

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from attnkit.accel.dropout import dropout

CellWeights = list[tuple[Tensor, Tensor, Tensor | None, Tensor]]


def project_inputs(rnn: nn.RNNBase, emb: Tensor) -> Tensor:
    """emb (..., E) -> the embedding part of layer 0's input gates, biases included: (..., G*H)."""
    w = rnn.weight_ih_l0[:, : emb.size(-1)]  # (G*H, E)
    return F.linear(emb, w, rnn.bias_ih_l0)


def cell_weights(rnn: nn.RNNBase, embedding_dim: int) -> CellWeights:
    """Per layer (w_ih, w_hh, b_ih, b_hh), sliced once per sequence.

    Layer 0 keeps only the columns of its non-embedding input; its b_ih is None because the
    hoisted projection carries it.
    """
    out = []
    for layer in range(rnn.num_layers):
        w_ih = getattr(rnn, f"weight_ih_l{layer}")
        b_ih = getattr(rnn, f"bias_ih_l{layer}")
        if layer == 0:
            w_ih, b_ih = w_ih[:, embedding_dim:], None
        w_hh, b_hh = getattr(rnn, f"weight_hh_l{layer}"), getattr(rnn, f"bias_hh_l{layer}")
        out.append((w_ih, w_hh, b_ih, b_hh))
    return out


def fused_step(
    rnn: nn.RNNBase,
    x_proj_t: Tensor,
    extra: Tensor | None,
    rnn_state: Any,
    weights: CellWeights,
    training: bool,
) -> tuple[Tensor, Any]:
    """One step of ``rnn`` on [emb_t; extra] given x_proj_t = project_inputs(emb_t) (B, G*H)
    -> (top layer's output (B, H), new state: (L, B, H), or a pair of them for an LSTM)."""
    if extra is None:  # nothing depends on the previous step: zero-width input
        extra = x_proj_t.new_empty(x_proj_t.size(0), 0)
    lstm = isinstance(rnn, nn.LSTM)
    h_all, c_all = rnn_state if lstm else (rnn_state, None)
    new_h, new_c = [], []
    for layer, (w_ih, w_hh, b_ih, b_hh) in enumerate(weights):
        if layer == 0:
            inp, b_ih = extra, x_proj_t  # the hoisted projection is a per-row input bias
        else:
            inp = dropout(new_h[-1], rnn.dropout, training)  # as nn.GRU between layers
        if lstm:
            h, c = torch.lstm_cell(inp, (h_all[layer], c_all[layer]), w_ih, w_hh, b_ih, b_hh)
        else:
            h, c = torch.gru_cell(inp, h_all[layer], w_ih, w_hh, b_ih, b_hh), None
        new_h.append(h)
        if lstm:
            new_c.append(c)
    h_stack = torch.stack(new_h)  # (L, B, H)
    return new_h[-1], ((h_stack, torch.stack(new_c)) if lstm else h_stack)
