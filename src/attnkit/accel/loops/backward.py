"""The backward steps both teacher-forcing loops share (through the RNN cell, through the
attention), the gradient buffers they fill step by step, and the all-step reductions of those
buffers into weight and memory gradients.

Shapes: T target steps, B batch, S source length, H decoder hidden, G gates (3 GRU, 4 LSTM), Dk
memory width, A attention width; n the rows still active at a step.
"""

from __future__ import annotations

import torch
from torch import Tensor

from attnkit.accel.cell_math import add_hidden_matmul, cell_backward, tanh_grad
from attnkit.accel.loops.forward import ForwardSteps, zeros_past_targets
from attnkit.accel.loops.spec import LoopInputs, LoopSpec, LoopWeights
from attnkit.accel.native import run_additive_backward


def flat(x: Tensor) -> Tensor:
    """(T, B, D) -> (T*B, D): the rows of every step, for one weight-gradient matmul."""
    return x.reshape(-1, x.size(-1))


def previous_states(h0: Tensor, states: Tensor) -> Tensor:
    """h0 (B, H), states (T, B, H) -> the state each step started from, (T, B, H)."""
    return torch.cat([h0.unsqueeze(0), states[:-1]])


def grad_by_previous(grad: Tensor, first: Tensor, states: Tensor) -> Tensor:
    """sum_t grad_t^T s_{t-1} over all steps, with s_{-1} = first (B, H) and s_t = states[t]
    (T, B, H); grad (T, B, G). As ``flat(grad).t() @ flat(previous_states(first, states))``
    without the concatenated copy."""
    return torch.addmm(grad[0].t() @ first, flat(grad[1:]).t(), flat(states[:-1]))


class BackwardSteps:
    """Backward through step t's cell and attention for the n active rows, into gradient buffers
    that are then reduced with one matmul each (rows past a target are zero).

    ``fwd``: the forward's buffers; ``inputs`` and ``weights``: the loop's (the backward reads
    neither x_proj nor comb_x).
    """

    def __init__(self, spec: LoopSpec, fwd: ForwardSteps, inputs: LoopInputs, weights: LoopWeights):
        steps, batch, hidden = fwd.out.shape
        projected = inputs.projected

        def zeros(*shape):
            return zeros_past_targets(fwd.out.new_empty, shape, inputs.active)

        self.spec, self.fwd, self.inputs, self.weights = spec, fwd, inputs, weights
        self.gates_x = zeros(*fwd.gates.shape)  # also the gradient of x_proj
        # GRU: the n part differs (times r)
        self.gates_h = self.gates_x if spec.lstm else zeros(*fwd.gates.shape)
        self.combined = zeros(steps, batch, hidden)  # before tanh
        self.context = zeros(steps, batch, inputs.keys.size(-1))
        self.scores = zeros(*fwd.weights.shape)
        self.queries = zeros(*fwd.queries.shape) if fwd.queries is not None else None
        # accumulated over the steps
        self.projected = torch.zeros_like(projected) if spec.additive else None
        self.v = projected.new_zeros(1, projected.size(-1)) if spec.additive else None
        self.e_grad = torch.empty_like(projected) if spec.additive and not fwd.kernel else None

    def cell(self, t: int, d_state: Tensor, d_c: Tensor | None, states: Tensor) -> Tensor:
        """Backward through step t's cell for the n = len(d_state) active rows, given d_state (n, H)
        with respect to its new state (states (T, B, H) as the forward wrote them): writes the gate
        gradients, updates d_c[:n] (LSTM; d_c (B, H)) in place and returns d h_{t-1} (n, H) through
        the cell."""
        spec, fwd, inputs = self.spec, self.fwd, self.inputs
        n = d_state.size(0)
        h_prev = states[t - 1, :n] if t > 0 else inputs.h0[:n]
        c_prev = (fwd.cells[t - 1, :n] if t > 0 else inputs.c0[:n]) if spec.lstm else None
        dgx = self.gates_x[t, :n]
        dgh = dgx if spec.lstm else self.gates_h[t, :n]
        direct, d_c_prev = cell_backward(
            spec.lstm,
            d_state,
            d_c[:n] if spec.lstm else None,
            fwd.gates[t, :n],
            fwd.extra[t, :n],
            h_prev,
            c_prev,
            dgx,
            dgh,
            native_gru=bool(fwd.native_gru),
        )  # d_state: a fresh, contiguous tensor
        if spec.lstm:
            d_c[:n] = d_c_prev
        return add_hidden_matmul(direct, dgh, self.weights.w_hh)

    def attend(self, t: int, d_context: Tensor, d_query_state: Tensor) -> Tensor:
        """Backward of step t's attention from d_context (n, Dk): adds d(query state) to
        ``d_query_state`` (n, H) and returns it. Writes the score gradients (zero where masked); for
        additive scores, adds this step's part of d P and d v. The key gradients through the
        contexts wait for :meth:`memory`."""
        spec, fwd = self.spec, self.fwd
        keys, projected = self.inputs.keys, self.inputs.projected
        w_q, v = self.weights.w_query, self.weights.v
        n = d_context.size(0)
        a = fwd.weights[t, :n]
        d_a = torch.bmm(keys[:n], d_context.unsqueeze(-1)).squeeze(-1)  # (n, S)
        # softmax backward
        d_s = torch.mul(a, d_a - (a * d_a).sum(-1, keepdim=True), out=self.scores[t, :n])
        if spec.additive:
            e = fwd.energies[t, :n]
            if fwd.kernel:  # the forward's kernel checks hold for these buffers too
                d_q = self.queries[t, :n] if w_q is not None else e.new_empty(n, e.size(-1))
                run_additive_backward(d_s, e, v, self.projected[:n], d_q)
            else:
                d_e = tanh_grad(d_s.unsqueeze(-1) * v, e, self.e_grad[:n])  # (n, S, A), before tanh
                self.projected[:n] += d_e
                d_q = d_e.sum(1)
            self.v.addmm_(d_s.reshape(1, -1), e.reshape(-1, e.size(-1)))
        else:
            d_q = torch.bmm(d_s.unsqueeze(1), projected[:n]).squeeze(1).mul_(spec.scale)
        if w_q is None:
            return d_query_state + d_q
        if not (spec.additive and fwd.kernel):  # the kernel wrote d_q there already
            self.queries[t, :n] = d_q
        return torch.addmm(d_query_state, d_q, w_q)

    def memory(self, query_states: Tensor) -> tuple[Tensor, Tensor, Tensor | None]:
        """After the loop: d keys through the contexts (B, S, Dk), d P (B, S, A) and d v (A,), each
        one batched matmul over all steps. query_states (T, B, H): what queried at each step."""
        spec, fwd = self.spec, self.fwd
        d_keys = torch.bmm(fwd.weights.permute(1, 2, 0), self.context.transpose(0, 1))
        if spec.additive:
            return d_keys, self.projected, self.v.view(-1)
        queries = fwd.queries if fwd.queries is not None else query_states
        return (
            d_keys,
            torch.bmm(self.scores.permute(1, 2, 0), queries.transpose(0, 1)).mul_(spec.scale),
            None,
        )

    def hidden_weights(self, states: Tensor) -> tuple[Tensor, Tensor]:
        """d W_hh (G*H, H) and d b_hh (G*H,) over all steps, from the states (T, B, H) (step t
        started from states[t - 1], step 0 from h0)."""
        return grad_by_previous(self.gates_h, self.inputs.h0, states), flat(self.gates_h).sum(0)

    def query_weight(self, query_states: Tensor) -> Tensor | None:
        """d W_q (A, H) over all steps, or None without a query projection."""
        return None if self.queries is None else flat(self.queries).t() @ flat(query_states)
