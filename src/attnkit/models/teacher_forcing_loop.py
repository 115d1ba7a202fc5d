"""Teacher forcing of the input-fed Luong decoder as one autograd node with a hand-derived backward.

Step t of the decoder (one layer, GRU or LSTM, input feeding):

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
        fill = torch.finfo(x_proj.dtype).min
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
            if spec.additive:
                e = torch.add(projected[:n], q.unsqueeze(1), out=energies[t, :n]).tanh_()  # (n, S, A)
                scores = torch.matmul(e, v)  # (n, S)
            else:
                scores = torch.bmm(projected[:n], q.unsqueeze(-1)).squeeze(-1).mul_(spec.scale)
            a = torch.softmax(scores.masked_fill_(blocked[:n], fill), -1).mul_(allowed[:n])
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
            # attention: context -> weights -> scores -> query
            a = weights[t, :n]
            d_a = torch.bmm(keys[:n], d_ch[:, :dk].unsqueeze(-1)).squeeze(-1)  # (n, S)
            d_s = torch.mul(a, d_a - (a * d_a).sum(-1, keepdim=True), out=d_scores[t, :n])  # softmax; 0 where masked
            if spec.additive:
                e = energies[t, :n]
                d_e = tanh_grad(d_s.unsqueeze(-1) * v, e, e_grad[:n])  # (n, S, A), before tanh
                d_projected[:n] += d_e
                d_q = d_e.sum(1)
                d_v.addmm_(d_s.reshape(1, -1), e.reshape(-1, e.size(-1)))
            else:
                d_q = torch.bmm(d_s.unsqueeze(1), projected[:n]).squeeze(1).mul_(spec.scale)
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
        d_keys = torch.bmm(weights.permute(1, 2, 0), d_context.transpose(0, 1))  # (B, S, Dk)
        d_w_q = None
        if has_q:
            d_w_q = _flat(d_queries).t() @ _flat(states)
        if spec.additive:
            d_v = d_v.view(-1)
        else:
            query_all = queries if has_q else states
            d_projected = torch.bmm(d_scores.permute(1, 2, 0), query_all.transpose(0, 1)).mul_(spec.scale)
        d_c0 = d_c if spec.lstm else None
        return (None, None, d_gates_x, d_h, d_c0, d_feed, d_keys, d_projected, None, None, d_w_feed, d_w_hh,
                d_b_hh, d_w_q, d_v, d_w_c, d_b_c)
