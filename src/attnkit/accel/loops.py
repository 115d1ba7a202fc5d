"""Teacher forcing of a one-layer attention decoder as one autograd node with a hand-derived
backward.

Two loops: :func:`run_loop` for the input-fed Luong decoder, :func:`run_bahdanau_loop` for the
Bahdanau-style one (s_{t-1} queries, then the RNN steps on [y_{t-1}; c_t]). Step t of the Luong
decoder (GRU or LSTM):

    gates_x = x_t + h~_{t-1} W_f^T           x_t: the embedding's part of the input gates, hoisted
                                             (T, B, G*H)
    gates_h = h_{t-1} W_hh^T + b_hh
    h_t     = cell(gates_x, gates_h, h_{t-1})                 GRU or LSTM gate arithmetic
    q_t     = h_t W_q^T   (or h_t itself)                     the query
    e_t     = v . tanh(q_t + P)   or   scale * P q_t          additive or dot scores over the source
                                                              (B, S)
    a_t     = masked softmax(e_t),  c_t = a_t K               weights (B, S), context (B, Dk)
    h~_t    = tanh([c_t; h_t] W_c^T + b_c) * keep_t           the attentional vector, dropout mask
                                                              keep_t

Autograd over that loop records dozens of small nodes per step, accumulates every weight gradient
step by step, and zero-fills views. Here the forward loop keeps what the backward needs in (T, ...)
buffers, and the backward loop does only what the recurrence forces to be sequential: the gradients
with respect to the step's inputs. Every weight gradient is then one matmul over all T*B rows (e.g.
dW_hh = dG_h^T [h_0..h_{T-1}]), and the key and value gradients one batched matmul over T. The
arithmetic is the same as the step loop's, so the two paths agree to float rounding (tested against
it, gradients included). On float32 CPU tensors the GRU gate arithmetic and the additive energies,
forward and backward, run in the compiled kernels of :mod:`attnkit.accel.native` (the same
arithmetic with a rational tanh, agreeing to about 1e-6).

Rows whose target has ended are not computed: with the batch sorted longest target first (the
batcher's order), step t works on the first ``active[t]`` rows only. Their outputs and weights are
zero past the end, where the step loop computes values that the loss then ignores.

Shapes: T target steps, B batch, S source length, H decoder hidden, G gates (3 GRU, 4 LSTM), Dk
memory width, A attention width.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import Tensor
from torch.autograd.function import once_differentiable

from attnkit.accel.cell_math import (
    add_hidden_matmul,
    cell_backward,
    cell_forward,
    gate_count,
    native_gru_applies,
    tanh_grad,
)
from attnkit.accel.cells import cell_weights, project_inputs
from attnkit.accel.native import covers, run_additive_backward, run_additive_energies
from attnkit.data.vocab import PAD_ID


def teacher_force(
    decoder, spec: LoopSpec, tgt_in: Tensor, emb: Tensor, state, memory
) -> tuple[Tensor, Tensor]:
    """A one-layer decoder's teacher forcing through the loop: tgt_in (B, T), emb (B, T, E) ->
    logits (B, T, V), weights (B, T, S). ``decoder``: an :class:`attnkit.models.seq2seq.Decoder`
    whose attention gave ``spec``; state and memory its DecoderState and Memory. Positions past a
    target's end get the output layer's bias and zero weights (the loss ignores them)."""
    b, steps = emb.shape[:2]
    x_proj = project_inputs(decoder.rnn, emb.transpose(0, 1))  # (T, B, G*H), each step contiguous
    keep = decoder.dropout_masks(b, steps, emb)  # (T, B, H) or None, as the step loop draws them
    # w_rest: W_ih's columns for h~ (Luong) or c (Bahdanau)
    ((w_rest, w_hh, _, b_hh),) = cell_weights(decoder.rnn, emb.size(-1))
    h0, c0 = (state.rnn[0][0], state.rnn[1][0]) if spec.lstm else (state.rnn[0], None)
    keys, projected, mask = memory.states, memory.projected, memory.mask
    bahdanau = decoder.style == "bahdanau"
    emb_out = feed0 = None
    if bahdanau:  # the output layer reads [s_t; c_t; y_{t-1}]: its y part for all steps at once
        split = decoder.hidden + keys.size(-1)
        w_sc = decoder.combine.weight[:, :split]
        emb_out = F.linear(
            emb.transpose(0, 1), decoder.combine.weight[:, split:], decoder.combine.bias
        )  # (T, B, H)
    else:
        feed0 = state.feed  # (B, H), h~_0
    lengths = (tgt_in != PAD_ID).sum(1)  # (B,)
    order = None
    if bool((lengths[1:] > lengths[:-1]).any()):  # the loop wants the longest target first
        order = torch.argsort(lengths, descending=True, stable=True)
        lengths = lengths[order]
        x_proj, keep = x_proj[:, order], (None if keep is None else keep[:, order])
        h0, c0 = h0[order], (None if c0 is None else c0[order])
        emb_out = None if emb_out is None else emb_out[:, order]
        feed0 = None if feed0 is None else feed0[order]
        keys, projected, mask = keys[order], projected[order], mask[order]
    positions = torch.arange(steps, device=lengths.device).unsqueeze(1)
    active = (lengths.unsqueeze(0) > positions).sum(1).tolist()
    w_q, v = spec.query_weight, spec.v
    if bahdanau:
        out, weights = run_bahdanau_loop(
            spec,
            x_proj,
            emb_out,
            h0,
            c0,
            keys,
            projected,
            mask,
            keep,
            w_rest,
            w_hh,
            b_hh,
            w_q,
            v,
            w_sc,
            active,
        )
    else:
        out, weights = run_loop(
            spec,
            x_proj,
            h0,
            c0,
            feed0,
            keys,
            projected,
            mask,
            keep,
            w_rest,
            w_hh,
            b_hh,
            w_q,
            v,
            decoder.combine.weight,
            decoder.combine.bias,
            active,
        )
    if order is not None:
        restore = torch.argsort(order)
        out, weights = out[:, restore], weights[:, restore]
    return decoder.output(out.transpose(0, 1)), weights.transpose(0, 1)


@dataclass(frozen=True, eq=False)
class LoopSpec:
    """What the loop computes, besides its tensors.

    lstm: LSTM gate arithmetic (else GRU); additive: ``v . tanh(q + P)`` scores
    (else ``scale * P q``). query_weight (A, H) and v (A,): the attention's parameters, as its
    ``loop_spec()`` gives them (:func:`teacher_force` reads them; the run functions take them as
    arguments).
    """

    lstm: bool
    additive: bool
    scale: float = 1.0
    query_weight: Tensor | None = None
    v: Tensor | None = None

    @classmethod
    def of(cls, lstm: bool, score) -> LoopSpec:
        """From an attention's :class:`attnkit.attention.modules.ScoreSpec`."""
        return cls(lstm, score.kind == "additive", score.scale, score.query_weight, score.v)


def run_loop(
    spec: LoopSpec,
    x_proj: Tensor,
    h0: Tensor,
    c0: Tensor | None,
    feed0: Tensor,
    keys: Tensor,
    projected: Tensor,
    mask: Tensor,
    keep: Tensor | None,
    w_feed: Tensor,
    w_hh: Tensor,
    b_hh: Tensor,
    w_q: Tensor | None,
    v: Tensor | None,
    w_c: Tensor,
    b_c: Tensor,
    active: list[int],
) -> tuple[Tensor, Tensor]:
    """The whole teacher-forced loop.

    x_proj (T, B, G*H) with b_ih inside; h0, c0, feed0 (B, H) (c0 None for a GRU); keys (B, S, Dk)
    the values attended; projected (B, S, A) the keys as scored; mask (B, S) bool; keep (T, B, H)
    scaled dropout masks or None; w_feed (G*H, H) the input-fed columns of W_ih; w_q (A, H) or None
    (query = h_t); v (A,) for additive scores; active: per step, how many leading rows still have a
    target token (non-increasing). Returns the attentional vectors (T, B, H) and the attention
    weights (T, B, S) (no gradient), zero for the rows past their target.
    """
    _check_active(active)
    return _TeacherForcingLoop.apply(
        spec,
        tuple(active),
        x_proj,
        h0,
        _or_empty(c0, h0),
        feed0,
        keys,
        projected,
        mask,
        _or_empty(keep, h0),
        w_feed,
        w_hh,
        b_hh,
        _or_empty(w_q, h0),
        _or_empty(v, h0),
        w_c,
        b_c,
    )


def run_bahdanau_loop(
    spec: LoopSpec,
    x_proj: Tensor,
    comb_x: Tensor,
    h0: Tensor,
    c0: Tensor | None,
    keys: Tensor,
    projected: Tensor,
    mask: Tensor,
    keep: Tensor | None,
    w_ctx: Tensor,
    w_hh: Tensor,
    b_hh: Tensor,
    w_q: Tensor | None,
    v: Tensor | None,
    w_sc: Tensor,
    active: list[int],
) -> tuple[Tensor, Tensor]:
    """The whole teacher-forced loop of the Bahdanau-style decoder (one layer):

        a_t, c_t = attention(s_{t-1});  s_t = cell([y_{t-1}; c_t], s_{t-1});
        out_t = tanh(W [s_t; c_t; y_{t-1}] + b)

    x_proj (T, B, G*H): the embedding's part of the input gates, b_ih inside; comb_x (T, B, H): the
    embedding's part of the output layer, b inside; w_ctx (G*H, Dk) the context columns of W_ih;
    w_sc (H, H + Dk) the [s_t; c_t] columns of W. The rest as :func:`run_loop`. Returns the outputs
    (T, B, H) (dropout applied) and the attention weights (T, B, S), zero past each target.
    """
    _check_active(active)
    return _BahdanauLoop.apply(
        spec,
        tuple(active),
        x_proj,
        comb_x,
        h0,
        _or_empty(c0, h0),
        keys,
        projected,
        mask,
        _or_empty(keep, h0),
        w_ctx,
        w_hh,
        b_hh,
        _or_empty(w_q, h0),
        _or_empty(v, h0),
        w_sc,
    )


def _check_active(active: list[int]) -> None:
    if any(a < b for a, b in zip(active, active[1:])):
        raise ValueError(f"active rows must not increase from step to step, got {active}")


def _or_empty(x: Tensor | None, like: Tensor) -> Tensor:
    """An absent input as an empty tensor (autograd Functions return one gradient per input)."""
    return like.new_empty(0) if x is None else x


def _flat(x: Tensor) -> Tensor:
    """(T, B, D) -> (T*B, D): the rows of every step, for one weight-gradient matmul."""
    return x.reshape(-1, x.size(-1))


def _previous_states(h0: Tensor, states: Tensor) -> Tensor:
    """h0 (B, H), states (T, B, H) -> the state each step started from, (T, B, H)."""
    return torch.cat([h0.unsqueeze(0), states[:-1]])


def _grad_by_previous(grad: Tensor, first: Tensor, states: Tensor) -> Tensor:
    """sum_t grad_t^T s_{t-1} over all steps, with s_{-1} = first (B, H) and s_t = states[t]
    (T, B, H); grad (T, B, G). As ``_flat(grad).t() @ _flat(_previous_states(first, states))``
    without the concatenated copy."""
    return torch.addmm(grad[0].t() @ first, _flat(grad[1:]).t(), _flat(states[:-1]))


def _zeros_past_targets(new_empty, shape: tuple[int, ...], active: tuple[int, ...]) -> Tensor:
    """An uninitialised (T, B, ...) buffer whose rows past each step's target, t >= active[t], are
    zero: the loops write every active row, and the zero rows keep the all-step weight-gradient
    matmuls exact. (Zeroing the whole buffer was a visible share of a step.)"""
    buffer = new_empty(shape)
    batch = shape[1]
    for t, n in enumerate(active):
        if n < batch:
            buffer[t, n:].zero_()
    return buffer


class _Forward:
    """The per-step buffers both loops keep for their backward, (T, B, ...) each.

    Those that enter the all-step weight-gradient matmuls (queries, weights, out) are zero in the
    rows past a target, so those contribute nothing. ``extra``: tanh(c_t) for an LSTM; for a GRU the
    hidden gates h_{t-1} W_hh^T + b_hh, whose n part r multiplies.
    """

    def __init__(
        self,
        spec: LoopSpec,
        x_proj: Tensor,
        keys: Tensor,
        projected: Tensor,
        hidden: int,
        query_dim: int,
        active: tuple[int, ...],
    ):
        steps, batch, _ = x_proj.shape
        new = x_proj.new_empty

        def zeros(*shape):
            return _zeros_past_targets(new, shape, active)

        self.gates = new(steps, batch, gate_count(spec.lstm) * hidden)  # activated
        self.extra = new(steps, batch, hidden if spec.lstm else self.gates.size(-1))
        self.cells = new(steps, batch, hidden) if spec.lstm else None
        self.queries = zeros(steps, batch, query_dim) if query_dim else None
        self.energies = (
            new(steps, batch, keys.size(1), projected.size(-1)) if spec.additive else None
        )
        self.kernel: bool | None = (
            None  # additive energies by attnkit.accel.native: decided at the first step
        )
        self.native_gru: bool | None = None  # GRU steps by attnkit.accel.native: likewise
        self.weights = zeros(steps, batch, keys.size(1))
        self.combined = new(steps, batch, hidden)  # tanh(...) before dropout
        self.out = zeros(steps, batch, hidden)

    def cell(
        self,
        spec: LoopSpec,
        t: int,
        gates_x: Tensor,
        h: Tensor,
        c: Tensor | None,
        w_hh_t: Tensor,
        b_hh: Tensor,
        states: Tensor,
    ) -> None:
        """Step t of the RNN cell for the n = len(h) active rows: writes states[t, :n]
        (and cells[t, :n])."""
        n = h.size(0)
        if spec.lstm:
            gates_h = torch.addmm(b_hh, h, w_hh_t)
            cell_forward(
                True,
                gates_x,
                gates_h,
                h,
                c[:n],
                self.gates[t, :n],
                self.extra[t, :n],
                states[t, :n],
                self.cells[t, :n],
            )
        else:
            if (
                self.native_gru is None
            ):  # the buffers keep their layout over the steps: checked once
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
                    self.gates[t, :n],
                    None,
                    states[t, :n],
                    None,
                    native_gru=True,
                    hidden_bias=b_hh,
                )
            else:
                gates_h = torch.addmm(b_hh, h, w_hh_t, out=self.extra[t, :n])
                cell_forward(
                    False, gates_x, gates_h, h, None, self.gates[t, :n], None, states[t, :n], None
                )

    def attend(
        self,
        spec: LoopSpec,
        t: int,
        h: Tensor,
        w_q_t: Tensor | None,
        keys: Tensor,
        projected: Tensor,
        v: Tensor,
        blocked: Tensor,
        allowed: Tensor,
    ) -> Tensor:
        """Step t's attention for the n = len(h) active rows queried by h (n, H): writes the weights
        and returns the context (n, Dk)."""
        n = h.size(0)
        q = h if w_q_t is None else torch.mm(h, w_q_t, out=self.queries[t, :n])
        if spec.additive:
            e = self.energies[t, :n]  # (n, S, A): tanh(q + P), kept for the backward
            if (
                self.kernel is None
            ):  # dtype, device and buffers stay the same over the steps: checked once
                self.kernel = covers(q.unsqueeze(1), projected[:n], v)
            if (
                self.kernel and q.is_contiguous()
            ):  # (without w_q, the Bahdanau loop's query is a strided view)
                scores = run_additive_energies(
                    q.unsqueeze(1), projected[:n], v, e.unsqueeze(1)
                ).squeeze(1)
            else:
                scores = torch.matmul(
                    torch.add(projected[:n], q.unsqueeze(1), out=e).tanh_(), v
                )  # (n, S)
        else:
            scores = torch.bmm(projected[:n], q.unsqueeze(-1)).squeeze(-1).mul_(spec.scale)
        a = torch.softmax(scores.masked_fill_(blocked[:n], torch.finfo(q.dtype).min), -1).mul_(
            allowed[:n]
        )
        self.weights[t, :n] = a
        return torch.bmm(a.unsqueeze(1), keys[:n]).squeeze(1)

    def release_outputs(self) -> tuple[Tensor, Tensor]:
        """(out, weights), no longer held here: outputs kept on ctx must go through
        save_for_backward, or output -> graph -> ctx -> output is a reference cycle that keeps the
        step's memory alive."""
        out, weights, self.out, self.weights = self.out, self.weights, None, None
        return out, weights

    def restore_outputs(self, out: Tensor, weights: Tensor) -> None:
        self.out, self.weights = out, weights

    def output(self, t: int, u: Tensor, keep: Tensor | None) -> None:
        """out[t, :n] = u (n, H) through step t's dropout mask."""
        n = u.size(0)
        if keep is None:
            self.out[t, :n] = u
        else:
            torch.mul(u, keep[t, :n], out=self.out[t, :n])


class _Backward:
    """The gradient buffers both loops fill step by step, then reduce with one matmul each (rows
    past a target are zero)."""

    def __init__(
        self,
        spec: LoopSpec,
        fwd: _Forward,
        projected: Tensor,
        context_dim: int,
        active: tuple[int, ...],
    ):
        steps, batch, hidden = fwd.out.shape

        def zeros(*shape):
            return _zeros_past_targets(fwd.out.new_empty, shape, active)

        self.gates_x = zeros(*fwd.gates.shape)  # also the gradient of x_proj
        self.gates_h = (
            self.gates_x if spec.lstm else zeros(*fwd.gates.shape)
        )  # GRU: the n part differs (times r)
        self.combined = zeros(steps, batch, hidden)  # before tanh
        self.context = zeros(steps, batch, context_dim)
        self.scores = zeros(*fwd.weights.shape)
        self.queries = zeros(*fwd.queries.shape) if fwd.queries is not None else None
        self.projected = (
            torch.zeros_like(projected) if spec.additive else None
        )  # accumulated over the steps
        self.v = projected.new_zeros(1, projected.size(-1)) if spec.additive else None
        self.e_grad = torch.empty_like(projected) if spec.additive and not fwd.kernel else None

    def cell(
        self,
        spec: LoopSpec,
        fwd: _Forward,
        t: int,
        d_state: Tensor,
        d_c: Tensor | None,
        states: Tensor,
        h0: Tensor,
        c0: Tensor,
        w_hh: Tensor,
    ) -> Tensor:
        """Backward through step t's cell for the n = len(d_state) active rows, given d_state (n, H)
        with respect to its new state: writes the gate gradients, updates d_c[:n] (LSTM) in place
        and returns d h_{t-1} (n, H) through the cell."""
        n = d_state.size(0)
        h_prev = states[t - 1, :n] if t > 0 else h0[:n]
        c_prev = (fwd.cells[t - 1, :n] if t > 0 else c0[:n]) if spec.lstm else None
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
        return add_hidden_matmul(direct, dgh, w_hh)

    def attend(
        self,
        spec: LoopSpec,
        fwd: _Forward,
        t: int,
        d_context: Tensor,
        d_query_state: Tensor,
        w_q: Tensor | None,
        keys: Tensor,
        projected: Tensor,
        v: Tensor,
    ) -> Tensor:
        """Backward of step t's attention from d_context (n, Dk): adds d(query state) to
        ``d_query_state`` (n, H) and returns it. Writes the score gradients (zero where masked); for
        additive scores, adds this step's part of d P and d v. The key gradients through the
        contexts wait for :meth:`memory`."""
        n = d_context.size(0)
        a = fwd.weights[t, :n]
        d_a = torch.bmm(keys[:n], d_context.unsqueeze(-1)).squeeze(-1)  # (n, S)
        d_s = torch.mul(
            a, d_a - (a * d_a).sum(-1, keepdim=True), out=self.scores[t, :n]
        )  # softmax backward
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

    def memory(
        self, spec: LoopSpec, fwd: _Forward, query_states: Tensor
    ) -> tuple[Tensor, Tensor, Tensor | None]:
        """After the loop: d keys through the contexts (B, S, Dk), d P (B, S, A) and d v (A,), each
        one batched matmul over all steps. query_states (T, B, H): what queried at each step."""
        d_keys = torch.bmm(fwd.weights.permute(1, 2, 0), self.context.transpose(0, 1))
        if spec.additive:
            return d_keys, self.projected, self.v.view(-1)
        queries = fwd.queries if fwd.queries is not None else query_states
        return (
            d_keys,
            torch.bmm(self.scores.permute(1, 2, 0), queries.transpose(0, 1)).mul_(spec.scale),
            None,
        )

    def hidden_weights(self, h0: Tensor, states: Tensor) -> tuple[Tensor, Tensor]:
        """d W_hh (G*H, H) and d b_hh (G*H,) over all steps, from the initial state h0 (B, H) and
        the states (T, B, H) (step t started from states[t - 1])."""
        return _grad_by_previous(self.gates_h, h0, states), _flat(self.gates_h).sum(0)

    def query_weight(self, query_states: Tensor) -> Tensor | None:
        """d W_q (A, H) over all steps, or None without a query projection."""
        return None if self.queries is None else _flat(self.queries).t() @ _flat(query_states)


class _TeacherForcingLoop(torch.autograd.Function):
    @staticmethod
    def forward(
        ctx,
        spec: LoopSpec,
        active,
        x_proj,
        h0,
        c0,
        feed0,
        keys,
        projected,
        mask,
        keep,
        w_feed,
        w_hh,
        b_hh,
        w_q,
        v,
        w_c,
        b_c,
    ):
        steps, batch, _ = x_proj.shape
        hidden, dk = h0.size(-1), keys.size(-1)
        keep_or_none = keep if keep.numel() else None
        w_q_t = w_q.t() if w_q.numel() else None
        w_feed_t, w_hh_t, w_c_t = w_feed.t(), w_hh.t(), w_c.t()
        fwd = _Forward(
            spec, x_proj, keys, projected, hidden, w_q.size(0) if w_q.numel() else 0, active
        )
        # [c_t; h_t] for every step: the combine layer's input, and h_t (a view) for the next step.
        ctx_h = _zeros_past_targets(x_proj.new_empty, (steps, batch, dk + hidden), active)
        states = ctx_h[..., dk:]  # (T, B, H)
        blocked, allowed = ~mask, mask.to(x_proj.dtype)
        h, c, feed = h0, c0, feed0
        for t in range(steps):
            n = active[t]
            gates_x = torch.addmm(x_proj[t, :n], feed[:n], w_feed_t)
            fwd.cell(spec, t, gates_x, h[:n], c, w_hh_t, b_hh, states)
            h, c = states[t], fwd.cells[t] if spec.lstm else None
            ctx_h[t, :n, :dk] = fwd.attend(
                spec, t, h[:n], w_q_t, keys, projected, v, blocked, allowed
            )
            u = torch.addmm(b_c, ctx_h[t, :n], w_c_t, out=fwd.combined[t, :n]).tanh_()
            fwd.output(t, u, keep_or_none)
            feed = fwd.out[t]
        out, weights = fwd.release_outputs()
        ctx.spec, ctx.active, ctx.fwd, ctx.ctx_h = spec, active, fwd, ctx_h
        ctx.save_for_backward(
            h0, c0, feed0, keys, projected, keep, w_feed, w_hh, w_q, v, w_c, out, weights
        )
        ctx.mark_non_differentiable(weights)
        return out, weights

    @staticmethod
    @once_differentiable  # the backward is not itself differentiated
    def backward(ctx, grad_out, _grad_weights):
        spec, active, fwd, ctx_h = ctx.spec, ctx.active, ctx.fwd, ctx.ctx_h
        h0, c0, feed0, keys, projected, keep, w_feed, w_hh, w_q, v, w_c, out, weights = (
            ctx.saved_tensors
        )
        fwd.restore_outputs(out, weights)
        steps, batch, hidden = grad_out.shape
        dk = keys.size(-1)
        w_q = w_q if w_q.numel() else None
        states = ctx_h[..., dk:]
        bwd = _Backward(spec, fwd, projected, dk, active)
        # gradients reaching step t from step t+1; rows past their target never get any and stay
        # zero
        zeros = grad_out.new_zeros
        d_h = zeros(batch, hidden)
        d_c = zeros(batch, hidden) if spec.lstm else None
        d_feed = zeros(batch, hidden)
        for t in reversed(range(steps)):
            n = active[t]
            d_o = grad_out[t, :n] + d_feed[:n]
            if keep.numel():
                d_o = d_o * keep[t, :n]
            d_u = tanh_grad(d_o, fwd.combined[t, :n], bwd.combined[t, :n])
            d_ch = torch.mm(d_u, w_c)  # (n, Dk + H)
            bwd.context[t, :n] = d_ch[:, :dk]
            d_h_t = bwd.attend(
                spec, fwd, t, d_ch[:, :dk], d_h[:n] + d_ch[:, dk:], w_q, keys, projected, v
            )
            d_h[:n] = bwd.cell(spec, fwd, t, d_h_t, d_c, states, h0, c0, w_hh)
            torch.mm(bwd.gates_x[t, :n], w_feed, out=d_feed[:n])
        # weight and memory gradients: one matmul over all steps each
        d_w_feed = _grad_by_previous(bwd.gates_x, feed0, fwd.out)
        d_w_hh, d_b_hh = bwd.hidden_weights(h0, states)
        d_w_c = _flat(bwd.combined).t() @ _flat(ctx_h)
        d_b_c = _flat(bwd.combined).sum(0)
        d_keys, d_projected, d_v = bwd.memory(spec, fwd, states)  # h_t queries
        d_c0 = d_c if spec.lstm else None
        fwd.release_outputs()  # ctx.fwd holding the outputs again would be a reference cycle
        return (
            None,
            None,
            bwd.gates_x,
            d_h,
            d_c0,
            d_feed,
            d_keys,
            d_projected,
            None,
            None,
            d_w_feed,
            d_w_hh,
            d_b_hh,
            bwd.query_weight(states),
            d_v,
            d_w_c,
            d_b_c,
        )


class _BahdanauLoop(torch.autograd.Function):
    @staticmethod
    def forward(
        ctx,
        spec: LoopSpec,
        active,
        x_proj,
        comb_x,
        h0,
        c0,
        keys,
        projected,
        mask,
        keep,
        w_ctx,
        w_hh,
        b_hh,
        w_q,
        v,
        w_sc,
    ):
        steps, batch, _ = x_proj.shape
        hidden = h0.size(-1)
        keep_or_none = keep if keep.numel() else None
        w_q_t = w_q.t() if w_q.numel() else None
        w_ctx_t, w_hh_t, w_sc_t = w_ctx.t(), w_hh.t(), w_sc.t()
        fwd = _Forward(
            spec, x_proj, keys, projected, hidden, w_q.size(0) if w_q.numel() else 0, active
        )
        # [s_t; c_t] for every step: the output layer's input; s_t and c_t are views of it
        state_ctx = _zeros_past_targets(
            x_proj.new_empty, (steps, batch, hidden + keys.size(-1)), active
        )
        states, contexts = state_ctx[..., :hidden], state_ctx[..., hidden:]
        blocked, allowed = ~mask, mask.to(x_proj.dtype)
        h, c = h0, c0
        for t in range(steps):
            n = active[t]
            contexts[t, :n] = fwd.attend(
                spec, t, h[:n], w_q_t, keys, projected, v, blocked, allowed
            )  # s_{t-1}
            gates_x = torch.addmm(x_proj[t, :n], contexts[t, :n], w_ctx_t)
            fwd.cell(spec, t, gates_x, h[:n], c, w_hh_t, b_hh, states)
            h, c = states[t], fwd.cells[t] if spec.lstm else None
            u = torch.addmm(
                comb_x[t, :n], state_ctx[t, :n], w_sc_t, out=fwd.combined[t, :n]
            ).tanh_()
            fwd.output(t, u, keep_or_none)
        out, weights = fwd.release_outputs()
        ctx.spec, ctx.active, ctx.fwd, ctx.state_ctx = spec, active, fwd, state_ctx
        ctx.save_for_backward(
            h0, c0, keys, projected, keep, w_ctx, w_hh, w_q, v, w_sc, out, weights
        )
        ctx.mark_non_differentiable(weights)
        return out, weights

    @staticmethod
    @once_differentiable  # the backward is not itself differentiated
    def backward(ctx, grad_out, _grad_weights):
        spec, active, fwd, state_ctx = ctx.spec, ctx.active, ctx.fwd, ctx.state_ctx
        h0, c0, keys, projected, keep, w_ctx, w_hh, w_q, v, w_sc, out, weights = ctx.saved_tensors
        fwd.restore_outputs(out, weights)
        steps, batch, hidden = grad_out.shape
        w_q = w_q if w_q.numel() else None
        states, contexts = state_ctx[..., :hidden], state_ctx[..., hidden:]
        bwd = _Backward(
            spec, fwd, projected, keys.size(-1), active
        )  # bwd.combined is also the gradient of comb_x
        d_h = grad_out.new_zeros(batch, hidden)  # d s_t from step t+1 (its cell and its query)
        d_c = grad_out.new_zeros(batch, hidden) if spec.lstm else None
        for t in reversed(range(steps)):
            n = active[t]
            d_o = grad_out[t, :n] * keep[t, :n] if keep.numel() else grad_out[t, :n]
            d_u = tanh_grad(d_o, fwd.combined[t, :n], bwd.combined[t, :n])
            d_sc = torch.mm(d_u, w_sc)  # (n, H + Dk)
            d_h_prev = bwd.cell(spec, fwd, t, d_h[:n] + d_sc[:, :hidden], d_c, states, h0, c0, w_hh)
            gates_x = bwd.gates_x[t, :n]
            d_ctx = torch.addmm(
                d_sc[:, hidden:], gates_x, w_ctx, out=bwd.context[t, :n]
            )  # output layer + RNN
            d_h[:n] = bwd.attend(spec, fwd, t, d_ctx, d_h_prev, w_q, keys, projected, v)
        h_prev_all = _previous_states(h0, states)  # s_{t-1}, which also queried at step t
        d_w_ctx = _flat(bwd.gates_x).t() @ _flat(contexts)
        d_w_hh, d_b_hh = bwd.hidden_weights(h0, states)
        d_w_sc = _flat(bwd.combined).t() @ _flat(state_ctx)
        d_keys, d_projected, d_v = bwd.memory(spec, fwd, h_prev_all)
        d_c0 = d_c if spec.lstm else None
        fwd.release_outputs()  # ctx.fwd holding the outputs again would be a reference cycle
        return (
            None,
            None,
            bwd.gates_x,
            bwd.combined,
            d_h,
            d_c0,
            d_keys,
            d_projected,
            None,
            None,
            d_w_ctx,
            d_w_hh,
            d_b_hh,
            bwd.query_weight(h_prev_all),
            d_v,
            d_w_sc,
        )
