"""A one-layer decoder's teacher forcing through the loops: its tensors and weights gathered into
:class:`LoopInputs` and :class:`LoopWeights`, the batch sorted longest target first, and the loop's
outputs through the decoder's output layer.

Shapes: T target steps, B batch, S source length, E embedding width, H decoder hidden, V target
vocabulary, Dk memory width.
"""

from __future__ import annotations

from dataclasses import replace

import torch
import torch.nn.functional as F
from torch import Tensor

from attnkit.accel.cells import cell_weights, project_inputs
from attnkit.accel.loops.functions import run_bahdanau_loop, run_loop
from attnkit.accel.loops.spec import LoopInputs, LoopSpec, LoopWeights
from attnkit.data.vocab import PAD_ID


def teacher_force(
    decoder, spec: LoopSpec, tgt_in: Tensor, emb: Tensor, state, memory
) -> tuple[Tensor, Tensor]:
    """A one-layer decoder's teacher forcing through the loop: tgt_in (B, T), emb (B, T, E) ->
    logits (B, T, V), weights (B, T, S). ``decoder``: an :class:`attnkit.models.seq2seq.Decoder`
    whose attention and form gave ``spec``; state and memory its DecoderState and Memory. Positions
    past a target's end get the output layer's bias and zero weights (the loss ignores them)."""
    inputs, weights = _inputs_and_weights(decoder, spec, emb, state, memory)
    lengths = (tgt_in != PAD_ID).sum(1)  # (B,)
    order = None
    if bool((lengths[1:] > lengths[:-1]).any()):  # the loop wants the longest target first
        order = torch.argsort(lengths, descending=True, stable=True)
        lengths = lengths[order]
        inputs = inputs.reordered(order)
    positions = torch.arange(emb.size(1), device=lengths.device).unsqueeze(1)
    active = tuple((lengths.unsqueeze(0) > positions).sum(1).tolist())
    run = run_bahdanau_loop if spec.attends_first else run_loop
    out, attn = run(spec, replace(inputs, active=active), weights)  # (T, B, H), (T, B, S)
    if order is not None:
        restore = torch.argsort(order)
        out, attn = out[:, restore], attn[:, restore]
    return decoder.output(out.transpose(0, 1)), attn.transpose(0, 1)


def _inputs_and_weights(
    decoder, spec: LoopSpec, emb: Tensor, state, memory
) -> tuple[LoopInputs, LoopWeights]:
    """The loop's inputs in the batch's own order (``active`` still empty) and weights."""
    b, steps = emb.shape[:2]
    x_proj = project_inputs(decoder.rnn, emb.transpose(0, 1))  # (T, B, G*H), each step contiguous
    keep = decoder.dropout_masks(b, steps, emb)  # (T, B, H) or None, as the step loop draws them
    # w_ih_rest: W_ih's columns for h~ (Luong) or c (Bahdanau)
    ((w_ih_rest, w_hh, _, b_hh),) = cell_weights(decoder.rnn, emb.size(-1))
    h0, c0 = (state.rnn[0][0], state.rnn[1][0]) if spec.lstm else (state.rnn[0], None)
    combine = decoder.combine
    # the Bahdanau form's output layer reads [s_t; c_t; y_{t-1}]: its y part for all steps at once
    if spec.attends_first:
        split = decoder.hidden + memory.states.size(-1)
        comb_x = F.linear(emb.transpose(0, 1), combine.weight[:, split:], combine.bias)  # (T, B, H)
        w_combine, b_combine, feed0 = combine.weight[:, :split], None, None
    else:
        comb_x, w_combine, b_combine, feed0 = None, combine.weight, combine.bias, state.feed
    inputs = LoopInputs(
        x_proj=x_proj,
        h0=h0,
        c0=c0,
        keys=memory.states,
        projected=memory.projected,
        mask=memory.mask,
        keep=keep,
        active=(),
        feed0=feed0,  # (B, H), h~_0
        comb_x=comb_x,
    )
    weights = LoopWeights(
        w_ih_rest=w_ih_rest,
        w_hh=w_hh,
        b_hh=b_hh,
        w_query=spec.query_weight,
        v=spec.v,
        w_combine=w_combine,
        b_combine=b_combine,
    )
    return inputs, weights
