"""Teacher forcing of a one-layer attention decoder as one autograd node with a hand-derived backward.

Two loops: :func:`run_loop` for the input-fed Luong decoder, :func:`run_bahdanau_loop` for the
Bahdanau-style one (s_{t-1} queries, then the RNN steps on [y_{t-1}; c_t]). Step t of the Luong decoder
(GRU or LSTM):

    gates_x = x_t + h~_{t-1} W_f^T           x_t: the embedding's part of the input gates, hoisted (T, B, G*H)
    gates_h = h_{t-1} W_hh^T + b_hh
    h_t     = cell(gates_x, gates_h, h_{t-1})                 GRU or LSTM gate arithmetic
    q_t     = h_t W_q^T   (or h_t itself)                     the query
    e_t     = v . tanh(q_t + P)   or   scale * P q_t          additive or dot scores over the source (B, S)
    a_t     = masked softmax(e_t),  c_t = a_t K               weights (B, S), context (B, Dk)
    h~_t    = tanh([c_t; h_t] W_c^T + b_c) * keep_t           the attentional vector, dropout mask keep_t

Autograd over that loop records dozens of small nodes per step, accumulates every weight gradient step by
step, and zero-fills views. Here the forward loop keeps what the backward needs in (T, ...) buffers, and the
backward loop does only what the recurrence forces to be sequential: the gradients with respect to the step's
inputs. Every weight gradient is then one matmul over all T*B rows (e.g. dW_hh = dG_h^T [h_0..h_{T-1}]), and
the key and value gradients one batched matmul over T. The arithmetic is the same as the step loop's, so the
two paths agree to float rounding (tested against it, gradients included).

Rows whose target has ended are not computed: with the batch sorted longest target first (the batcher's
order), step t works on the first ``active[t]`` rows only. Their outputs and weights are zero past the end,
where the step loop computes values that the loss then ignores.

Shapes: T target steps, B batch, S source length, H decoder hidden, G gates (3 GRU, 4 LSTM), Dk memory
width, A attention width.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor
from torch.autograd.function import once_differentiable

from attnkit.models.cell_math import add_hidden_matmul, cell_backward, cell_forward, gate_count, tanh_grad


@dataclass(frozen=True)
class LoopSpec:
    """What the loop computes, besides its tensors.

    lstm: LSTM gate arithmetic (else GRU); additive: ``v . tanh(q + P)`` scores (else ``scale * P q``).
    """

    lstm: bool
    additive: bool
    scale: float = 1.0


def run_loop(spec: LoopSpec, x_proj: Tensor, h0: Tensor, c0: Tensor | None, feed0: Tensor, keys: Tensor,
             projected: Tensor, mask: Tensor, keep: Tensor | None, w_feed: Tensor, w_hh: Tensor, b_hh: Tensor,
             w_q: Tensor | None, v: Tensor | None, w_c: Tensor, b_c: Tensor, active: list[int]
             ) -> tuple[Tensor, Tensor]:
    """The whole teacher-forced loop.

    x_proj (T, B, G*H) with b_ih inside; h0, c0, feed0 (B, H) (c0 None for a GRU); keys (B, S, Dk) the values
    attended; projected (B, S, A) the keys as scored; mask (B, S) bool; keep (T, B, H) scaled dropout masks or
    None; w_feed (G*H, H) the input-fed columns of W_ih; w_q (A, H) or None (query = h_t); v (A,) for additive
    scores; active: per step, how many leading rows still have a target token (non-increasing).
    Returns the attentional vectors (T, B, H) and the attention weights (T, B, S) (no gradient), zero for
    the rows past their target.
    """
    if any(a < b for a, b in zip(active, active[1:])):
        raise ValueError(f"active rows must not increase from step to step, got {active}")
    if c0 is None:
        c0 = h0.new_empty(0)
    if keep is None:
        keep = h0.new_empty(0)
    if w_q is None:
        w_q = h0.new_empty(0)
    if v is None:
        v = h0.new_empty(0)
    return _TeacherForcingLoop.apply(spec, tuple(active), x_proj, h0, c0, feed0, keys, projected, mask, keep,
                                     w_feed, w_hh, b_hh, w_q, v, w_c, b_c)


def _flat(x: Tensor) -> Tensor:
    """(T, B, D) -> (T*B, D): the rows of every step, for one weight-gradient matmul."""
    return x.reshape(-1, x.size(-1))


def _attend(spec: LoopSpec, q: Tensor, projected: Tensor, v: Tensor, blocked: Tensor, allowed: Tensor,
            energies: Tensor | None) -> Tensor:
    """One step's attention weights for the first n rows: q (n, A) -> (n, S). ``energies`` (n, S, A) receives
    tanh(q + P) for additive scores."""
    n = q.size(0)
    if spec.additive:
        e = torch.add(projected[:n], q.unsqueeze(1), out=energies).tanh_()  # (n, S, A)
        scores = torch.matmul(e, v)  # (n, S)
    else:
        scores = torch.bmm(projected[:n], q.unsqueeze(-1)).squeeze(-1).mul_(spec.scale)
    return torch.softmax(scores.masked_fill_(blocked[:n], torch.finfo(q.dtype).min), -1).mul_(allowed[:n])


def _attend_backward(spec: LoopSpec, d_context: Tensor, a: Tensor, keys: Tensor, projected: Tensor, v: Tensor,
                     energies: Tensor | None, e_grad: Tensor | None, d_projected: Tensor | None,
                     d_v: Tensor | None, d_scores: Tensor) -> Tensor:
    """Backward of one step's attention from d_context (n, Dk) to the query: returns d q (n, A).

    Writes the score gradients into ``d_scores`` (n, S) (zero where masked); for additive scores, adds this
    step's part of d P into ``d_projected`` and of d v into ``d_v`` (1, A). The key gradients through the
    context are left to one batched matmul after the loop (:func:`_memory_grads`).
    """
    n = a.size(0)
    d_a = torch.bmm(keys[:n], d_context.unsqueeze(-1)).squeeze(-1)  # (n, S)
    d_s = torch.mul(a, d_a - (a * d_a).sum(-1, keepdim=True), out=d_scores)  # softmax backward
    if spec.additive:
        d_e = tanh_grad(d_s.unsqueeze(-1) * v, energies, e_grad[:n])  # (n, S, A), before tanh
        d_projected[:n] += d_e
        d_v.addmm_(d_s.reshape(1, -1), energies.reshape(-1, energies.size(-1)))
        return d_e.sum(1)
    return torch.bmm(d_s.unsqueeze(1), projected[:n]).squeeze(1).mul_(spec.scale)


def _memory_grads(spec: LoopSpec, weights: Tensor, d_context: Tensor, d_scores: Tensor, queries: Tensor,
                  d_projected: Tensor | None, d_v: Tensor | None) -> tuple[Tensor, Tensor, Tensor | None]:
    """After the loop: d keys through the contexts (B, S, Dk), d P (B, S, A) and d v (A,), each one batched
    matmul over all steps. weights, d_scores (T, B, S); d_context (T, B, Dk); queries (T, B, A) as scored."""
    d_keys = torch.bmm(weights.permute(1, 2, 0), d_context.transpose(0, 1))
    if spec.additive:
        return d_keys, d_projected, d_v.view(-1)
    d_projected = torch.bmm(d_scores.permute(1, 2, 0), queries.transpose(0, 1)).mul_(spec.scale)
    return d_keys, d_projected, None


class _TeacherForcingLoop(torch.autograd.Function):
    # Optional inputs arrive as empty tensors (autograd Functions return one gradient per input). Buffers
    # that enter the all-step weight-gradient matmuls are zero-initialised: rows past a target stay zero.

    @staticmethod
    def forward(ctx, spec: LoopSpec, active, x_proj, h0, c0, feed0, keys, projected, mask, keep, w_feed, w_hh,
                b_hh, w_q, v, w_c, b_c):
        steps, batch, _ = x_proj.shape
        hidden = h0.size(-1)
        dk = keys.size(-1)
        has_keep, has_q = keep.numel() > 0, w_q.numel() > 0
        new, zeros = x_proj.new_empty, x_proj.new_zeros
        # [c_t; h_t] for every step: the combine layer's input, and h_t (a view) for the next step.
        ctx_h = zeros(steps, batch, dk + hidden)
        states = ctx_h[..., dk:]  # (T, B, H)
        gates = new(steps, batch, gate_count(spec.lstm) * hidden)  # activated gates
        # LSTM: tanh(c_t); GRU: the hidden gates h_{t-1} W_hh^T + b_hh, whose n part r multiplies
        extra = new(steps, batch, hidden if spec.lstm else gates.size(-1))
        cells = new(steps, batch, hidden) if spec.lstm else None
        queries = zeros(steps, batch, w_q.size(0)) if has_q else None
        energies = new(steps, batch, keys.size(1), projected.size(-1)) if spec.additive else None
        weights = zeros(steps, batch, keys.size(1))
        combined = new(steps, batch, hidden)  # tanh(...) before dropout
        out = zeros(steps, batch, hidden)
        blocked, allowed = ~mask, mask.to(x_proj.dtype)
        h, c, feed = h0, c0, feed0
        for t in range(steps):
            n = active[t]
            h, feed = h[:n], feed[:n]
            if spec.lstm:
                gh = torch.addmm(b_hh, h, w_hh.t())
                gx = torch.addmm(x_proj[t, :n], feed, w_feed.t())
                cell_forward(True, gx, gh, h, c[:n], gates[t, :n], extra[t, :n], states[t, :n], cells[t, :n])
                c = cells[t]
            else:
                gh = torch.addmm(b_hh, h, w_hh.t(), out=extra[t, :n])
                gx = torch.addmm(x_proj[t, :n], feed, w_feed.t())
                cell_forward(False, gx, gh, h, None, gates[t, :n], None, states[t, :n], None)
            h = states[t]
            q = h[:n] if not has_q else torch.mm(h[:n], w_q.t(), out=queries[t, :n])
            a = _attend(spec, q, projected, v, blocked, allowed, energies[t, :n] if spec.additive else None)
            weights[t, :n] = a
            ctx_h[t, :n, :dk] = torch.bmm(a.unsqueeze(1), keys[:n]).squeeze(1)
            u = torch.addmm(b_c, ctx_h[t, :n], w_c.t(), out=combined[t, :n]).tanh_()
            if has_keep:
                torch.mul(u, keep[t, :n], out=out[t, :n])
            else:
                out[t, :n] = u
            feed = out[t]
        ctx.spec, ctx.active = spec, active
        ctx.buffers = (ctx_h, gates, extra, cells, queries, energies, combined)
        ctx.save_for_backward(h0, c0, feed0, keys, projected, keep, w_feed, w_hh, w_q, v, w_c, out, weights)
        ctx.mark_non_differentiable(weights)
        return out, weights

    @staticmethod
    @once_differentiable  # the backward is not itself differentiated
    def backward(ctx, grad_out, _grad_weights):
        spec, active = ctx.spec, ctx.active
        ctx_h, gates, extra, cells, queries, energies, combined = ctx.buffers
        h0, c0, feed0, keys, projected, keep, w_feed, w_hh, w_q, v, w_c, out, weights = ctx.saved_tensors
        steps, batch, hidden = grad_out.shape
        dk = keys.size(-1)
        has_keep, has_q = keep.numel() > 0, w_q.numel() > 0
        states = ctx_h[..., dk:]
        zeros = grad_out.new_zeros
        d_gates_x = zeros(gates.shape)  # also the gradient of x_proj
        d_gates_h = d_gates_x if spec.lstm else zeros(gates.shape)  # GRU: the n part differs (times r)
        d_combined = zeros(steps, batch, hidden)  # before tanh
        d_context = zeros(steps, batch, dk)
        d_scores = zeros(weights.shape)
        d_queries = zeros(queries.shape) if has_q else None
        d_projected = torch.zeros_like(projected) if spec.additive else None
        d_v = zeros(1, projected.size(-1)) if spec.additive else None
        e_grad = torch.empty_like(projected) if spec.additive else None
        # gradients reaching step t from step t+1; rows past their target never get any and stay zero
        d_h = zeros(batch, hidden)
        d_c = zeros(batch, hidden) if spec.lstm else None
        d_feed = zeros(batch, hidden)
        for t in reversed(range(steps)):
            n = active[t]
            d_o = grad_out[t, :n] + d_feed[:n]
            if has_keep:
                d_o = d_o * keep[t, :n]
            d_u = tanh_grad(d_o, combined[t, :n], d_combined[t, :n])
            d_ch = torch.mm(d_u, w_c)  # (n, Dk + H)
            d_context[t, :n] = d_ch[:, :dk]
            d_h_t = d_h[:n] + d_ch[:, dk:]
            d_q = _attend_backward(spec, d_ch[:, :dk], weights[t, :n], keys, projected, v,
                                   energies[t, :n] if spec.additive else None, e_grad, d_projected, d_v,
                                   d_scores[t, :n])
            if has_q:
                d_queries[t, :n] = d_q
                d_h_t = torch.addmm(d_h_t, d_q, w_q)
            else:
                d_h_t = d_h_t + d_q
            # the cell
            h_prev = states[t - 1, :n] if t > 0 else h0[:n]
            c_prev = (cells[t - 1, :n] if t > 0 else c0[:n]) if spec.lstm else None
            dgx = d_gates_x[t, :n]
            dgh = dgx if spec.lstm else d_gates_h[t, :n]
            direct, d_c_prev = cell_backward(spec.lstm, d_h_t, d_c[:n] if spec.lstm else None, gates[t, :n],
                                             extra[t, :n], h_prev, c_prev, dgx, dgh)
            d_h[:n] = add_hidden_matmul(direct, dgh, w_hh)
            if spec.lstm:
                d_c[:n] = d_c_prev
            torch.mm(dgx, w_feed, out=d_feed[:n])
        # weight and memory gradients: one matmul over all steps each
        h_prev_all = torch.cat([h0.unsqueeze(0), states[:-1]])  # (T, B, H)
        feed_prev_all = torch.cat([feed0.unsqueeze(0), out[:-1]])
        d_w_feed = _flat(d_gates_x).t() @ _flat(feed_prev_all)
        d_w_hh = _flat(d_gates_h).t() @ _flat(h_prev_all)
        d_b_hh = _flat(d_gates_h).sum(0)
        d_w_c = _flat(d_combined).t() @ _flat(ctx_h)
        d_b_c = _flat(d_combined).sum(0)
        d_keys, d_projected, d_v = _memory_grads(spec, weights, d_context, d_scores,
                                                 queries if has_q else states, d_projected, d_v)
        d_w_q = _flat(d_queries).t() @ _flat(states) if has_q else None
        d_c0 = d_c if spec.lstm else None
        return (None, None, d_gates_x, d_h, d_c0, d_feed, d_keys, d_projected, None, None, d_w_feed, d_w_hh,
                d_b_hh, d_w_q, d_v, d_w_c, d_b_c)


def run_bahdanau_loop(spec: LoopSpec, x_proj: Tensor, comb_x: Tensor, h0: Tensor, c0: Tensor | None, keys: Tensor,
                      projected: Tensor, mask: Tensor, keep: Tensor | None, w_ctx: Tensor, w_hh: Tensor,
                      b_hh: Tensor, w_q: Tensor | None, v: Tensor | None, w_sc: Tensor, active: list[int]
                      ) -> tuple[Tensor, Tensor]:
    """The whole teacher-forced loop of the Bahdanau-style decoder (one layer):

        a_t, c_t = attention(s_{t-1});  s_t = cell([y_{t-1}; c_t], s_{t-1});  out_t = tanh(W [s_t; c_t; y_{t-1}] + b)

    x_proj (T, B, G*H): the embedding's part of the input gates, b_ih inside; comb_x (T, B, H): the
    embedding's part of the output layer, b inside; w_ctx (G*H, Dk) the context columns of W_ih; w_sc
    (H, H + Dk) the [s_t; c_t] columns of W. The rest as :func:`run_loop`. Returns the outputs (T, B, H)
    (dropout applied) and the attention weights (T, B, S), zero past each target.
    """
    if any(a < b for a, b in zip(active, active[1:])):
        raise ValueError(f"active rows must not increase from step to step, got {active}")
    empty = h0.new_empty(0)
    return _BahdanauLoop.apply(spec, tuple(active), x_proj, comb_x, h0, empty if c0 is None else c0, keys,
                               projected, mask, empty if keep is None else keep, w_ctx, w_hh, b_hh,
                               empty if w_q is None else w_q, empty if v is None else v, w_sc)


class _BahdanauLoop(torch.autograd.Function):
    # As _TeacherForcingLoop: empty tensors for absent inputs, zero-initialised buffers where rows end.

    @staticmethod
    def forward(ctx, spec: LoopSpec, active, x_proj, comb_x, h0, c0, keys, projected, mask, keep, w_ctx, w_hh,
                b_hh, w_q, v, w_sc):
        steps, batch, _ = x_proj.shape
        hidden = h0.size(-1)
        has_keep, has_q = keep.numel() > 0, w_q.numel() > 0
        new, zeros = x_proj.new_empty, x_proj.new_zeros
        # [s_t; c_t] for every step: the output layer's input; s_t and c_t are views of it
        state_ctx = zeros(steps, batch, hidden + keys.size(-1))
        states, contexts = state_ctx[..., :hidden], state_ctx[..., hidden:]
        gates = new(steps, batch, gate_count(spec.lstm) * hidden)
        extra = new(steps, batch, hidden if spec.lstm else gates.size(-1))  # as in _TeacherForcingLoop
        cells = new(steps, batch, hidden) if spec.lstm else None
        queries = zeros(steps, batch, w_q.size(0)) if has_q else None
        energies = new(steps, batch, keys.size(1), projected.size(-1)) if spec.additive else None
        weights = zeros(steps, batch, keys.size(1))
        combined = new(steps, batch, hidden)
        out = zeros(steps, batch, hidden)
        blocked, allowed = ~mask, mask.to(x_proj.dtype)
        h, c = h0, c0
        for t in range(steps):
            n = active[t]
            h = h[:n]
            q = h if not has_q else torch.mm(h, w_q.t(), out=queries[t, :n])  # s_{t-1} queries
            a = _attend(spec, q, projected, v, blocked, allowed, energies[t, :n] if spec.additive else None)
            weights[t, :n] = a
            contexts[t, :n] = torch.bmm(a.unsqueeze(1), keys[:n]).squeeze(1)
            gx = torch.addmm(x_proj[t, :n], contexts[t, :n], w_ctx.t())
            if spec.lstm:
                gh = torch.addmm(b_hh, h, w_hh.t())
                cell_forward(True, gx, gh, h, c[:n], gates[t, :n], extra[t, :n], states[t, :n], cells[t, :n])
                c = cells[t]
            else:
                gh = torch.addmm(b_hh, h, w_hh.t(), out=extra[t, :n])
                cell_forward(False, gx, gh, h, None, gates[t, :n], None, states[t, :n], None)
            h = states[t]
            u = torch.addmm(comb_x[t, :n], state_ctx[t, :n], w_sc.t(), out=combined[t, :n]).tanh_()
            if has_keep:
                torch.mul(u, keep[t, :n], out=out[t, :n])
            else:
                out[t, :n] = u
        ctx.spec, ctx.active = spec, active
        ctx.buffers = (state_ctx, gates, extra, cells, queries, energies, combined)
        ctx.save_for_backward(h0, c0, keys, projected, keep, w_ctx, w_hh, w_q, v, w_sc, weights)
        ctx.mark_non_differentiable(weights)
        return out, weights

    @staticmethod
    @once_differentiable  # the backward is not itself differentiated
    def backward(ctx, grad_out, _grad_weights):
        spec, active = ctx.spec, ctx.active
        state_ctx, gates, extra, cells, queries, energies, combined = ctx.buffers
        h0, c0, keys, projected, keep, w_ctx, w_hh, w_q, v, w_sc, weights = ctx.saved_tensors
        steps, batch, hidden = grad_out.shape
        has_keep, has_q = keep.numel() > 0, w_q.numel() > 0
        states, contexts = state_ctx[..., :hidden], state_ctx[..., hidden:]
        zeros = grad_out.new_zeros
        d_gates_x = zeros(gates.shape)  # also the gradient of x_proj
        d_gates_h = d_gates_x if spec.lstm else zeros(gates.shape)
        d_combined = zeros(steps, batch, hidden)  # before tanh; also the gradient of comb_x
        d_context = zeros(steps, batch, keys.size(-1))
        d_scores = zeros(weights.shape)
        d_queries = zeros(queries.shape) if has_q else None
        d_projected = torch.zeros_like(projected) if spec.additive else None
        d_v = zeros(1, projected.size(-1)) if spec.additive else None
        e_grad = torch.empty_like(projected) if spec.additive else None
        d_h = zeros(batch, hidden)  # d s_t from step t+1 (its cell and its query)
        d_c = zeros(batch, hidden) if spec.lstm else None
        for t in reversed(range(steps)):
            n = active[t]
            d_o = grad_out[t, :n] * keep[t, :n] if has_keep else grad_out[t, :n]
            d_u = tanh_grad(d_o, combined[t, :n], d_combined[t, :n])
            d_sc = torch.mm(d_u, w_sc)  # (n, H + Dk)
            d_s = d_h[:n] + d_sc[:, :hidden]
            h_prev = states[t - 1, :n] if t > 0 else h0[:n]
            c_prev = (cells[t - 1, :n] if t > 0 else c0[:n]) if spec.lstm else None
            dgx = d_gates_x[t, :n]
            dgh = dgx if spec.lstm else d_gates_h[t, :n]
            direct, d_c_prev = cell_backward(spec.lstm, d_s, d_c[:n] if spec.lstm else None, gates[t, :n],
                                             extra[t, :n], h_prev, c_prev, dgx, dgh)
            d_h_prev = add_hidden_matmul(direct, dgh, w_hh)
            d_ctx = torch.addmm(d_sc[:, hidden:], dgx, w_ctx, out=d_context[t, :n])  # output layer + RNN input
            d_q = _attend_backward(spec, d_ctx, weights[t, :n], keys, projected, v,
                                   energies[t, :n] if spec.additive else None, e_grad, d_projected, d_v,
                                   d_scores[t, :n])
            if has_q:
                d_queries[t, :n] = d_q
                d_h_prev = torch.addmm(d_h_prev, d_q, w_q)
            else:
                d_h_prev = d_h_prev + d_q
            d_h[:n] = d_h_prev
            if spec.lstm:
                d_c[:n] = d_c_prev
        h_prev_all = torch.cat([h0.unsqueeze(0), states[:-1]])  # (T, B, H): s_{t-1}, the queries' source
        d_w_ctx = _flat(d_gates_x).t() @ _flat(contexts)
        d_w_hh = _flat(d_gates_h).t() @ _flat(h_prev_all)
        d_b_hh = _flat(d_gates_h).sum(0)
        d_w_sc = _flat(d_combined).t() @ _flat(state_ctx)
        d_keys, d_projected, d_v = _memory_grads(spec, weights, d_context, d_scores,
                                                 queries if has_q else h_prev_all, d_projected, d_v)
        d_w_q = _flat(d_queries).t() @ _flat(h_prev_all) if has_q else None
        d_c0 = d_c if spec.lstm else None
        return (None, None, d_gates_x, d_combined, d_h, d_c0, d_keys, d_projected, None, None, d_w_ctx, d_w_hh,
                d_b_hh, d_w_q, d_v, d_w_sc)
