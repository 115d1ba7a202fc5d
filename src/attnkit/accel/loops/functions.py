"""The two teacher-forcing loops, each one autograd node: :func:`run_loop` (input-fed Luong) and
:func:`run_bahdanau_loop`.

Each Function's forward runs the steps and keeps their buffers; its backward runs the steps in
reverse doing only what the recurrence forces to be sequential, then reduces every weight gradient
with one matmul over all steps.

Shapes: T target steps, B batch, S source length, H decoder hidden, G gates (3 GRU, 4 LSTM), Dk
memory width, A attention width.
"""

from __future__ import annotations

import torch
from torch import Tensor
from torch.autograd.function import once_differentiable

from attnkit.accel.cell_math import tanh_grad
from attnkit.accel.loops.backward import BackwardSteps, flat, grad_by_previous, previous_states
from attnkit.accel.loops.forward import ForwardSteps, zeros_past_targets
from attnkit.accel.loops.spec import LoopInputs, LoopSpec, LoopWeights, spread, unpack

# Function.apply gives gradients only to tensors among its direct arguments: the Functions below
# take the LoopInputs' and LoopWeights' tensors spread out (spec.spread) and return one gradient
# per tensor, in the same order (LoopInputs.gradients, LoopWeights.gradients).


def run_loop(spec: LoopSpec, inputs: LoopInputs, weights: LoopWeights) -> tuple[Tensor, Tensor]:
    """The whole teacher-forced loop of the input-fed Luong decoder (one layer): step t is

        h_t = cell([y_{t-1}; h~_{t-1}], h_{t-1});  a_t, c_t = attention(h_t);
        h~_t = tanh(W_c [c_t; h_t] + b_c) * keep_t

    ``inputs.feed0`` is h~_0. Returns the attentional vectors (T, B, H) and the attention weights
    (T, B, S) (no gradient), zero for the rows past their target.
    """
    if inputs.feed0 is None:
        raise ValueError("the input-fed loop needs inputs.feed0, the attentional vector h~_0")
    return _LuongLoop.apply(spec, inputs.active, *spread(inputs, weights))


def run_bahdanau_loop(
    spec: LoopSpec, inputs: LoopInputs, weights: LoopWeights
) -> tuple[Tensor, Tensor]:
    """The whole teacher-forced loop of the Bahdanau-style decoder (one layer): step t is

        a_t, c_t = attention(s_{t-1});  s_t = cell([y_{t-1}; c_t], s_{t-1});
        out_t = tanh(W [s_t; c_t; y_{t-1}] + b) * keep_t

    ``inputs.comb_x`` holds W's y part and b. Returns the outputs (T, B, H) and the attention
    weights (T, B, S) (no gradient), zero past each target.
    """
    if inputs.comb_x is None:
        raise ValueError("the Bahdanau loop needs inputs.comb_x, the output layer's y part")
    return _BahdanauLoop.apply(spec, inputs.active, *spread(inputs, weights))


class _LuongLoop(torch.autograd.Function):
    @staticmethod
    def forward(ctx, spec: LoopSpec, active: tuple[int, ...], *tensors: Tensor):
        inputs, weights = unpack(tensors, active)
        x_proj = inputs.x_proj
        steps, batch, _ = x_proj.shape
        hidden, dk = inputs.h0.size(-1), inputs.keys.size(-1)
        w_feed_t, w_c_t = weights.w_ih_rest.t(), weights.w_combine.t()
        fwd = ForwardSteps(spec, inputs, weights)
        # [c_t; h_t] for every step: the combine layer's input, and h_t (a view) for the next step.
        ctx_h = zeros_past_targets(x_proj.new_empty, (steps, batch, dk + hidden), active)
        states = ctx_h[..., dk:]  # (T, B, H)
        h, c, feed = inputs.h0, inputs.c0, inputs.feed0
        for t in range(steps):
            n = active[t]
            gates_x = torch.addmm(x_proj[t, :n], feed[:n], w_feed_t)
            fwd.cell(t, gates_x, h[:n], c, states)
            h, c = states[t], fwd.cells[t] if spec.lstm else None
            ctx_h[t, :n, :dk] = fwd.attend(t, h[:n])
            u = torch.addmm(weights.b_combine, ctx_h[t, :n], w_c_t, out=fwd.combined[t, :n])
            fwd.output(t, u.tanh_())
            feed = fwd.out[t]
        out, attn = fwd.finish()
        ctx.spec, ctx.active, ctx.fwd, ctx.ctx_h = spec, active, fwd, ctx_h
        ctx.save_for_backward(*spread(inputs.without_projections(), weights), out, attn)
        ctx.mark_non_differentiable(attn)
        return out, attn

    @staticmethod
    @once_differentiable  # the backward is not itself differentiated
    def backward(ctx, grad_out, _grad_attn):
        spec, active, fwd, ctx_h = ctx.spec, ctx.active, ctx.fwd, ctx.ctx_h
        *saved, out, attn = ctx.saved_tensors
        inputs, weights = unpack(saved, active)
        fwd.restore_outputs(out, attn)
        steps, batch, hidden = grad_out.shape
        dk = inputs.keys.size(-1)
        states = ctx_h[..., dk:]
        bwd = BackwardSteps(spec, fwd, inputs, weights)
        # gradients reaching step t from step t+1; rows past their target never get any and stay
        # zero
        d_h = grad_out.new_zeros(batch, hidden)
        d_c = grad_out.new_zeros(batch, hidden) if spec.lstm else None
        d_feed = grad_out.new_zeros(batch, hidden)
        for t in reversed(range(steps)):
            n = active[t]
            d_o = grad_out[t, :n] + d_feed[:n]
            if inputs.keep is not None:
                d_o = d_o * inputs.keep[t, :n]
            d_u = tanh_grad(d_o, fwd.combined[t, :n], bwd.combined[t, :n])
            d_ch = torch.mm(d_u, weights.w_combine)  # (n, Dk + H)
            bwd.context[t, :n] = d_ch[:, :dk]
            d_h_t = bwd.attend(t, d_ch[:, :dk], d_h[:n] + d_ch[:, dk:])
            d_h[:n] = bwd.cell(t, d_h_t, d_c, states)
            torch.mm(bwd.gates_x[t, :n], weights.w_ih_rest, out=d_feed[:n])
        # weight and memory gradients: one matmul over all steps each
        d_w_hh, d_b_hh = bwd.hidden_weights(states)
        d_keys, d_projected, d_v = bwd.memory(states)  # h_t queries
        grads_in = LoopInputs.gradients(
            x_proj=bwd.gates_x, h0=d_h, c0=d_c, keys=d_keys, projected=d_projected, feed0=d_feed
        )
        grads_w = LoopWeights.gradients(
            w_ih_rest=grad_by_previous(bwd.gates_x, inputs.feed0, fwd.out),
            w_hh=d_w_hh,
            b_hh=d_b_hh,
            w_query=bwd.query_weight(states),
            v=d_v,
            w_combine=flat(bwd.combined).t() @ flat(ctx_h),
            b_combine=flat(bwd.combined).sum(0),
        )
        fwd.finish()  # ctx.fwd holding the outputs again would be a reference cycle
        return None, None, *grads_in, *grads_w


class _BahdanauLoop(torch.autograd.Function):
    @staticmethod
    def forward(ctx, spec: LoopSpec, active: tuple[int, ...], *tensors: Tensor):
        inputs, weights = unpack(tensors, active)
        x_proj, comb_x = inputs.x_proj, inputs.comb_x
        steps, batch, _ = x_proj.shape
        hidden = inputs.h0.size(-1)
        w_ctx_t, w_sc_t = weights.w_ih_rest.t(), weights.w_combine.t()
        fwd = ForwardSteps(spec, inputs, weights)
        # [s_t; c_t] for every step: the output layer's input; s_t and c_t are views of it
        state_ctx = zeros_past_targets(
            x_proj.new_empty, (steps, batch, hidden + inputs.keys.size(-1)), active
        )
        states, contexts = state_ctx[..., :hidden], state_ctx[..., hidden:]
        h, c = inputs.h0, inputs.c0
        for t in range(steps):
            n = active[t]
            contexts[t, :n] = fwd.attend(t, h[:n])  # s_{t-1} queries
            gates_x = torch.addmm(x_proj[t, :n], contexts[t, :n], w_ctx_t)
            fwd.cell(t, gates_x, h[:n], c, states)
            h, c = states[t], fwd.cells[t] if spec.lstm else None
            u = torch.addmm(comb_x[t, :n], state_ctx[t, :n], w_sc_t, out=fwd.combined[t, :n])
            fwd.output(t, u.tanh_())
        out, attn = fwd.finish()
        ctx.spec, ctx.active, ctx.fwd, ctx.state_ctx = spec, active, fwd, state_ctx
        ctx.save_for_backward(*spread(inputs.without_projections(), weights), out, attn)
        ctx.mark_non_differentiable(attn)
        return out, attn

    @staticmethod
    @once_differentiable  # the backward is not itself differentiated
    def backward(ctx, grad_out, _grad_attn):
        spec, active, fwd, state_ctx = ctx.spec, ctx.active, ctx.fwd, ctx.state_ctx
        *saved, out, attn = ctx.saved_tensors
        inputs, weights = unpack(saved, active)
        fwd.restore_outputs(out, attn)
        steps, batch, hidden = grad_out.shape
        states, contexts = state_ctx[..., :hidden], state_ctx[..., hidden:]
        bwd = BackwardSteps(spec, fwd, inputs, weights)  # bwd.combined: also the gradient of comb_x
        d_h = grad_out.new_zeros(batch, hidden)  # d s_t from step t+1 (its cell and its query)
        d_c = grad_out.new_zeros(batch, hidden) if spec.lstm else None
        keep = inputs.keep
        for t in reversed(range(steps)):
            n = active[t]
            d_o = grad_out[t, :n] * keep[t, :n] if keep is not None else grad_out[t, :n]
            d_u = tanh_grad(d_o, fwd.combined[t, :n], bwd.combined[t, :n])
            d_sc = torch.mm(d_u, weights.w_combine)  # (n, H + Dk)
            d_h_prev = bwd.cell(t, d_h[:n] + d_sc[:, :hidden], d_c, states)
            # through the output layer and the RNN's input
            d_ctx = torch.addmm(
                d_sc[:, hidden:], bwd.gates_x[t, :n], weights.w_ih_rest, out=bwd.context[t, :n]
            )
            d_h[:n] = bwd.attend(t, d_ctx, d_h_prev)
        h_prev_all = previous_states(inputs.h0, states)  # s_{t-1}, which also queried at step t
        d_w_hh, d_b_hh = bwd.hidden_weights(states)
        d_keys, d_projected, d_v = bwd.memory(h_prev_all)
        grads_in = LoopInputs.gradients(
            x_proj=bwd.gates_x,
            h0=d_h,
            c0=d_c,
            keys=d_keys,
            projected=d_projected,
            comb_x=bwd.combined,
        )
        grads_w = LoopWeights.gradients(
            w_ih_rest=flat(bwd.gates_x).t() @ flat(contexts),
            w_hh=d_w_hh,
            b_hh=d_b_hh,
            w_query=bwd.query_weight(h_prev_all),
            v=d_v,
            w_combine=flat(bwd.combined).t() @ flat(state_ctx),
        )
        fwd.finish()  # ctx.fwd holding the outputs again would be a reference cycle
        return None, None, *grads_in, *grads_w
