"""The forward steps both teacher-forcing loops share (the RNN cell, the attention, the dropout on
the output) and the per-step buffers they keep for the backward.

Shapes: T target steps, B batch, S source length, H decoder hidden, G gates (3 GRU, 4 LSTM), Dk
memory width, A attention width; n the rows still active at a step.
"""

from __future__ import annotations

import torch
from torch import Tensor

from attnkit.accel.cell_math import cell_forward, gate_count, native_gru_applies
from attnkit.accel.loops.spec import LoopInputs, LoopSpec, LoopWeights
from attnkit.accel.native import covers, run_additive_energies
from attnkit.attention.scores import masked_softmax


def zeros_past_targets(new_empty, shape: tuple[int, ...], active: tuple[int, ...]) -> Tensor:
    """An uninitialised (T, B, ...) buffer whose rows past each step's target, t >= active[t], are
    zero: the loops write every active row, and the zero rows keep the all-step weight-gradient
    matmuls exact. (Zeroing the whole buffer was a visible share of a step.)"""
    buffer = new_empty(shape)
    batch = shape[1]
    for t, n in enumerate(active):
        if n < batch:
            buffer[t, n:].zero_()
    return buffer


class ForwardSteps:
    """Step t's cell, attention and output for the n active rows, and the per-step buffers both
    loops keep for their backward, (T, B, ...) each.

    Those that enter the all-step weight-gradient matmuls (queries, weights, out) are zero in the
    rows past a target, so those contribute nothing. ``extra``: tanh(c_t) for an LSTM; for a GRU the
    hidden gates h_{t-1} W_hh^T + b_hh, whose n part r multiplies.

    The steps' operands (the memory, the weights) are dropped by :meth:`finish`: the backward takes
    them from its Function's saved tensors, not from here.
    """

    def __init__(self, spec: LoopSpec, inputs: LoopInputs, weights: LoopWeights):
        steps, batch, _ = inputs.x_proj.shape
        hidden = inputs.h0.size(-1)
        keys, projected = inputs.keys, inputs.projected
        new = inputs.x_proj.new_empty
        active = inputs.active

        def zeros(*shape):
            return zeros_past_targets(new, shape, active)

        self.spec = spec
        self.gates = new(steps, batch, gate_count(spec.lstm) * hidden)  # activated
        self.extra = new(steps, batch, hidden if spec.lstm else self.gates.size(-1))
        self.cells = new(steps, batch, hidden) if spec.lstm else None
        query_dim = 0 if weights.w_query is None else weights.w_query.size(0)
        self.queries = zeros(steps, batch, query_dim) if query_dim else None
        self.energies = (
            new(steps, batch, keys.size(1), projected.size(-1)) if spec.additive else None
        )
        # additive energies by attnkit.accel.native: decided at the first step
        self.kernel: bool | None = None
        self.native_gru: bool | None = None  # GRU steps by attnkit.accel.native: likewise
        self.weights = zeros(steps, batch, keys.size(1))
        self.combined = new(steps, batch, hidden)  # tanh(...) before dropout
        self.out = zeros(steps, batch, hidden)
        # the operands
        self._keys, self._projected, self._v, self._keep = keys, projected, weights.v, inputs.keep
        self._mask = inputs.mask
        self._w_query_t = None if weights.w_query is None else weights.w_query.t()
        self._w_hh_t, self._b_hh = weights.w_hh.t(), weights.b_hh

    def cell(self, t: int, gates_x: Tensor, h: Tensor, c: Tensor | None, states: Tensor) -> None:
        """Step t of the RNN cell for the n = len(h) active rows, given the input gates gates_x
        (n, G*H), h (n, H) and c (B, H) (LSTM; None for a GRU): writes states[t, :n] (states
        (T, B, H)) and cells[t, :n]."""
        n = h.size(0)
        w_hh_t, b_hh = self._w_hh_t, self._b_hh
        if self.spec.lstm:
            gates_h = torch.addmm(b_hh, h, w_hh_t)
            cell_forward(
                True,
                gates_x,
                gates_h,
                h,
                c[:n],
                gates=self.gates[t, :n],
                extra=self.extra[t, :n],
                h_out=states[t, :n],
                c_out=self.cells[t, :n],
            )
            return
        if self.native_gru is None:  # the buffers keep their layout over the steps: checked once
            self.native_gru = native_gru_applies(
                False, gates_x, h, self.extra[t, :n], self.gates[t, :n], states[t, :n], b_hh
            )
        if self.native_gru:  # the kernel adds b_hh: addmm would first copy it into its output
            gates_h = torch.mm(h, w_hh_t, out=self.extra[t, :n])
            cell_forward(
                False,
                gates_x,
                gates_h,
                h,
                None,
                gates=self.gates[t, :n],
                extra=None,
                h_out=states[t, :n],
                c_out=None,
                native_gru=True,
                hidden_bias=b_hh,
            )
        else:
            gates_h = torch.addmm(b_hh, h, w_hh_t, out=self.extra[t, :n])
            cell_forward(
                False,
                gates_x,
                gates_h,
                h,
                None,
                gates=self.gates[t, :n],
                extra=None,
                h_out=states[t, :n],
                c_out=None,
            )

    def attend(self, t: int, h: Tensor) -> Tensor:
        """Step t's attention for the n = len(h) active rows queried by h (n, H): writes the weights
        and returns the context (n, Dk)."""
        n = h.size(0)
        keys, projected, v = self._keys, self._projected, self._v
        q = h if self._w_query_t is None else torch.mm(h, self._w_query_t, out=self.queries[t, :n])
        if self.spec.additive:
            e = self.energies[t, :n]  # (n, S, A): tanh(q + P), kept for the backward
            if self.kernel is None:  # dtype, device and buffers stay the same over the steps
                self.kernel = covers(q.unsqueeze(1), projected[:n], v)
            # (without w_q, the Bahdanau loop's query is a strided view)
            if self.kernel and q.is_contiguous():
                scores = run_additive_energies(
                    q.unsqueeze(1), projected[:n], v, e.unsqueeze(1)
                ).squeeze(1)
            else:
                scores = torch.matmul(
                    torch.add(projected[:n], q.unsqueeze(1), out=e).tanh_(), v
                )  # (n, S)
        else:
            scores = torch.bmm(projected[:n], q.unsqueeze(-1)).squeeze(-1).mul_(self.spec.scale)
        a = masked_softmax(scores, self._mask[:n])  # (n, S)
        self.weights[t, :n] = a
        return torch.bmm(a.unsqueeze(1), keys[:n]).squeeze(1)

    def output(self, t: int, u: Tensor) -> None:
        """out[t, :n] = u (n, H) through step t's dropout mask."""
        n = u.size(0)
        if self._keep is None:
            self.out[t, :n] = u
        else:
            torch.mul(u, self._keep[t, :n], out=self.out[t, :n])

    def finish(self) -> tuple[Tensor, Tensor]:
        """After the last step: (out, weights), no longer held here, and the operands dropped.
        Outputs kept on ctx must go through save_for_backward, or output -> graph -> ctx -> output
        is a reference cycle that keeps the step's memory alive."""
        out, weights, self.out, self.weights = self.out, self.weights, None, None
        self._keys = self._projected = self._v = self._keep = None
        self._mask = self._w_query_t = self._w_hh_t = self._b_hh = None
        return out, weights

    def restore_outputs(self, out: Tensor, weights: Tensor) -> None:
        self.out, self.weights = out, weights
