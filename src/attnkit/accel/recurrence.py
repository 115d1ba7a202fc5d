"""One (bi)directional GRU/LSTM layer over whole sequences with a hand-derived backward, for
training on CPU.

The encoder (and the Luong decoder without input feeding) run ``nn.GRU``/``nn.LSTM`` over whole
sequences; on a CPU its autograd graph has nodes per step and direction, accumulates the weight
gradients step by step and, for a packed batch, zero-fills the packed gradient. This layer computes
the same function in one autograd node:

* the input projection of every step and both directions is one matmul, outside the node (autograd);
* the backward direction reads each source reversed within its own length, so both directions are
  left aligned, run in the same loop, and their hidden matmuls are one batched matmul (D, B, H) x
  (D, H, G*H);
* past a sequence's end its state is carried unchanged and its output is zero, as packing gives;
* the backward loop does only the per-step input gradients; each weight gradient is one batched
  matmul over all steps.
* on float32 CPU tensors a GRU's gate arithmetic, forward and backward, is one compiled kernel per
  step (:mod:`attnkit.accel.native`; it agrees with torch's to about 1e-6).

On CUDA the models keep cuDNN's RNN, which runs the whole recurrence in one call.

Shapes: B batch, S source length, In input width, H hidden per direction, G gates, D directions.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor, nn
from torch.autograd.function import once_differentiable

from attnkit.accel.cell_math import (
    add_hidden_matmul,
    cell_backward,
    cell_forward,
    gate_count,
    native_gru_applies,
)
from attnkit.accel.dropout import dropout


def encode(rnn: nn.RNNBase, emb: Tensor, lengths: Tensor, training: bool) -> tuple[Tensor, Tensor]:
    """What the encoder's packed ``rnn`` computes, layer by layer through :func:`rnn_layer`:
    emb (B, S, E), lengths (B,) -> states (B, S, D*H), zero past each length, and the last
    layer's final states of every direction joined, (B, D*H)."""
    steps = emb.size(1)
    lengths = lengths.to(emb.device)
    valid = (torch.arange(steps, device=emb.device).unsqueeze(1) < lengths).to(emb.dtype)  # (S, B)
    reverse = reversal_index(lengths, steps) if rnn.bidirectional else None
    x = emb.transpose(0, 1)  # (S, B, E), time-major
    for layer in range(rnn.num_layers):
        if layer > 0:  # between layers, as nn.GRU/nn.LSTM apply their dropout
            x = dropout(x, rnn.dropout, training)
        x, final = rnn_layer(rnn, layer, x, valid, reverse)  # (S, B, D*H), (D, B, H)
    # contiguous, so the caller's dropout draws the packed path's mask
    return x.transpose(0, 1).contiguous(), torch.cat(final.unbind(0), -1)


def over_target(rnn: nn.RNNBase, valid: Tensor, emb: Tensor, rnn_state, training: bool) -> Tensor:
    """A decoder ``rnn`` over the whole target from its initial state: valid (B, T) bool, emb
    (B, T, E), rnn_state (L, B, H) (a pair for an LSTM) -> outputs (B, T, H), zero past each
    target's end (the loss ignores them)."""
    h0, c0 = rnn_state if isinstance(rnn, nn.LSTM) else (rnn_state, None)  # (L, B, H)
    valid = valid.t().to(emb.dtype)  # (T, B)
    x = emb.transpose(0, 1)  # (T, B, E)
    for layer in range(rnn.num_layers):
        if layer > 0:  # between layers, as nn.GRU/nn.LSTM apply their dropout
            x = dropout(x, rnn.dropout, training)
        x, _ = rnn_layer(
            rnn,
            layer,
            x,
            valid,
            None,
            h0[layer : layer + 1],
            None if c0 is None else c0[layer : layer + 1],
        )
    return x.transpose(0, 1)


def reversal_index(lengths: Tensor, steps: int) -> Tensor:
    """(S, B) time index that reverses each column within its length and leaves the padding in
    place.

    It is its own inverse, so it also puts the backward direction's outputs back in source order.
    """
    t = torch.arange(steps, device=lengths.device).unsqueeze(1)  # (S, 1)
    lengths = lengths.to(t.device).unsqueeze(0)  # (1, B)
    return torch.where(t < lengths, lengths - 1 - t, t)


def rnn_layer(
    rnn: nn.RNNBase,
    layer: int,
    x: Tensor,
    valid: Tensor,
    reverse: Tensor | None,
    h0: Tensor | None = None,
    c0: Tensor | None = None,
) -> tuple[Tensor, Tensor]:
    """Layer ``layer`` of ``rnn`` (its own parameters) over time-major x (S, B, In).

    valid (S, B) float, 1 where t < length; reverse (S, B) from :func:`reversal_index` (None for a
    unidirectional RNN); h0, c0 (D, B, H) initial states (None: zeros; c0 for an LSTM only). Returns
    the outputs (S, B, D*H), zero past each length, and the final hidden state of each direction
    (D, B, H) (for an LSTM the final h; no caller needs the final c).
    """
    lstm = isinstance(rnn, nn.LSTM)
    suffixes = ["", "_reverse"] if rnn.bidirectional else [""]
    params = [
        [getattr(rnn, f"{name}_l{layer}{sfx}") for sfx in suffixes]
        for name in ("weight_ih", "weight_hh", "bias_ih", "bias_hh")
    ]
    w_ih, w_hh, b_ih, b_hh = params
    gates_x = [F.linear(x, w_ih[0], b_ih[0])]  # (S, B, G*H): every step at once
    if reverse is not None:
        x_rev = x.gather(0, reverse.unsqueeze(-1).expand_as(x))
        gates_x.append(F.linear(x_rev, w_ih[1], b_ih[1]))
    gates_x = torch.stack(gates_x)  # (D, S, B, G*H)
    if h0 is None:
        h0 = x.new_zeros(gates_x.size(0), x.size(1), w_hh[0].size(1))
    if c0 is None and lstm:
        c0 = torch.zeros_like(h0)
    out, final = _Recurrence.apply(
        lstm,
        gates_x,
        torch.stack(w_hh),
        torch.stack(b_hh),
        valid,
        h0,
        h0.new_empty(0) if c0 is None else c0,
    )
    outputs = out.unbind(0)  # (S, B, H) per direction, left aligned
    if reverse is not None:
        backward = outputs[1].gather(0, reverse.unsqueeze(-1).expand_as(outputs[1]))
        return torch.cat([outputs[0], backward], -1), final
    return outputs[0], final


class _Recurrence(torch.autograd.Function):
    """gates_x (D, S, B, G*H) b_ih inside; w_hh (D, G*H, H); b_hh (D, G*H); valid (S, B); h0, c0
    (D, B, H) (c0 empty for a GRU) -> outputs (D, S, B, H) and final states (D, B, H)."""

    @staticmethod
    def forward(ctx, lstm: bool, gates_x, w_hh, b_hh, valid, h0, c0):
        dirs, steps, batch, _ = gates_x.shape
        hidden = w_hh.size(-1)
        new = gates_x.new_empty
        states = new(steps + 1, dirs, batch, hidden)  # states[t + 1] after step t; states[0] = h0
        states[0] = h0
        cells = new(steps + 1, dirs, batch, hidden) if lstm else None
        if lstm:
            cells[0] = c0
        gates = new(steps, dirs, batch, gate_count(lstm) * hidden)
        # LSTM: tanh(c_t); GRU: the hidden gates, whose n part r multiplies
        extra = new(steps, dirs, batch, hidden if lstm else gates.size(-1))
        out = new(dirs, steps, batch, hidden)
        w_hh_t = w_hh.transpose(1, 2)  # (D, H, G*H)
        bias = b_hh.unsqueeze(1)  # (D, 1, G*H)
        keep = valid.unsqueeze(-1)  # (S, B, 1): 1 up to each sequence's end
        carry = 1 - keep  # 1 past the end, where the state is carried unchanged
        native_gru = native_gru_applies(
            lstm, gates_x[:, 0], extra[0], states[0], gates[0], out[:, 0], b_hh
        )
        for t in range(steps):
            h_prev = states[t]
            h_new = out[:, t]
            if lstm:
                gh = torch.baddbmm(bias, h_prev, w_hh_t)  # (D, B, G*H)
                c_new = new(dirs, batch, hidden)
                cell_forward(
                    True, gates_x[:, t], gh, h_prev, cells[t], gates[t], extra[t], h_new, c_new
                )
            elif native_gru:  # the kernel adds b_hh: baddbmm would first copy it into its output
                gh = torch.bmm(h_prev, w_hh_t, out=extra[t])
                cell_forward(
                    False,
                    gates_x[:, t],
                    gh,
                    h_prev,
                    None,
                    gates[t],
                    None,
                    h_new,
                    None,
                    native_gru=True,
                    hidden_bias=b_hh,
                )
            else:
                gh = torch.baddbmm(bias, h_prev, w_hh_t, out=extra[t])
                cell_forward(False, gates_x[:, t], gh, h_prev, None, gates[t], None, h_new, None)
            h_new.mul_(keep[t])  # zero output past the end
            # past a source's end the state is carried: h_t = h_{t-1} there
            torch.addcmul(h_new, h_prev, carry[t], out=states[t + 1])
            if lstm:
                torch.addcmul(c_new * keep[t], cells[t], carry[t], out=cells[t + 1])
        ctx.lstm, ctx.native_gru = lstm, native_gru
        ctx.buffers = (states, cells, gates, extra)
        ctx.save_for_backward(w_hh, valid)
        return out, states[-1].clone()

    @staticmethod
    @once_differentiable  # the backward is not itself differentiated
    def backward(ctx, grad_out, grad_final):
        lstm = ctx.lstm
        states, cells, gates, extra = ctx.buffers
        w_hh, valid = ctx.saved_tensors
        dirs, steps, batch, hidden = grad_out.shape
        # (D, S, B, G*H), the layout of gates_x and of the weight-gradient matmuls: no copies after
        # the loop
        d_gates_x = grad_out.new_empty(dirs, steps, batch, gates.size(-1))
        d_gates_h = d_gates_x if lstm else torch.empty_like(d_gates_x)
        d_h = (
            grad_final.clone()
            if grad_final is not None
            else grad_out.new_zeros(dirs, batch, hidden)
        )
        d_c = grad_out.new_zeros(dirs, batch, hidden) if lstm else None
        keep = valid.unsqueeze(-1)
        carry = 1 - keep
        for t in reversed(range(steps)):
            # the part of d h_t that reaches h_{t-1} unchanged past the end
            carried = d_h * carry[t]
            d_new = (d_h + grad_out[:, t]) * keep[t]
            dgx = d_gates_x[:, t]
            dgh = dgx if lstm else d_gates_h[:, t]
            d_c_new = d_c * keep[t] if lstm else None
            direct, d_c_prev = cell_backward(
                lstm,
                d_new,
                d_c_new,
                gates[t],
                extra[t],
                states[t],
                cells[t] if lstm else None,
                dgx,
                dgh,
                native_gru=ctx.native_gru,
            )
            d_h = add_hidden_matmul(direct, dgh, w_hh) + carried
            if lstm:
                d_c = d_c_prev + d_c * carry[t]
        # weight gradients: per direction, one matmul over all steps
        flat_dgh = d_gates_h.view(dirs, steps * batch, -1)  # (D, S*B, G*H)
        flat_prev = states[:-1].transpose(0, 1).reshape(dirs, steps * batch, hidden)
        d_w_hh = torch.bmm(flat_dgh.transpose(1, 2), flat_prev)  # (D, G*H, H)
        d_b_hh = flat_dgh.sum(1)
        return None, d_gates_x, d_w_hh, d_b_hh, None, d_h, d_c
