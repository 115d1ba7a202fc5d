"""The decoder styles of the seq2seq model, one class per style, found by name in
:data:`DECODERS` (``model.decoder``; ``auto`` picks one from ``model.attention``).

Each style is a :class:`attnkit.models.rnn_decoder.RNNDecoder`, which holds what they share
(embeddings, the bridge s_0 = tanh(W_b [final forward state; final backward state]), the
recurrent step, dropout, teacher forcing, one-step decoding, the backends); a style adds the
equations of one step. Every attending style holds any attention of :mod:`attnkit.attention`.

* ``bahdanau`` (Bahdanau et al. 2015): the previous state s_{t-1} queries the
  memory, the context c_t enters the RNN input [y_{t-1}; c_t], and the output
  reads tanh(W_o [s_t; c_t; y_{t-1}]).
* ``fixed`` (Cho et al. 2014; Sutskever et al. 2014): no attention (``model.attention: none``).
  The Bahdanau equations with c_t = c, the encoder's final state, at every step: the RNN steps
  on [y_{t-1}; c] and the output reads tanh(W_o [s_t; c; y_{t-1}]). The whole source must pass
  through that one vector, the bottleneck attention was invented to remove. No step reads the
  previous one's context, so the fast backends run the RNN over the whole target in one call.
* ``luong`` (Luong et al. 2015): the RNN steps first on [y_{t-1}; h~_{t-1}]
  (input feeding) or y_{t-1} alone; the new state h_t queries the memory; the
  attentional vector h~_t = tanh(W_c [c_t; h_t]) feeds the output layer. Without
  input feeding the fast backends run the RNN over the whole target in one call
  and attention for all steps as one batched matmul.

A copying model (``model.copy: true``) wraps a style in the copy switch
(:mod:`attnkit.models.copy`); :func:`pairs_with` says which attention each style takes.

Shapes: B batch, S source length, T target length, E embedding width, H decoder hidden,
Dk encoder state width (hidden x directions), V vocab, L decoder layers.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import torch
from torch import Tensor

from attnkit.accel import recurrence
from attnkit.attention.modules import NO_ATTENTION
from attnkit.data.vocab import PAD_ID
from attnkit.models.rnn_decoder import DecoderState, RNNDecoder, top_layer

if TYPE_CHECKING:
    from attnkit.models.seq2seq import Memory, Seq2SeqConfig


class BahdanauDecoder(RNNDecoder):
    """Bahdanau et al. (2015): the previous state s_{t-1} (B, H) queries the memory; the context
    c_t (B, Dk) enters the RNN's input [y_{t-1}; c_t]; the output reads
    tanh(W_o [s_t; c_t; y_{t-1}]) (``combine`` is W_o).

    Each step reads the attention before it steps, so teacher forcing steps through T; the
    ``native`` backend trains a one-layer decoder through its handwritten-backward loop.
    """

    style = "bahdanau"
    has_handwritten_loop = True
    attends_before_step = True

    def combine_width(self, cfg: Seq2SeqConfig) -> int:
        return cfg.decoder_hidden + cfg.memory_dim + cfg.embedding_dim  # [s_t; c_t; y_{t-1}]

    def rnn_input_width(self, cfg: Seq2SeqConfig) -> int:
        return cfg.embedding_dim + cfg.memory_dim  # [y_{t-1}; c_t]

    def _step(self, emb_t, state, memory, x_proj_t=None, keep_t=None, weights=None):
        """emb_t (B, E) -> pre-output (B, H), the next state, weights (B, S)."""
        query = top_layer(state.rnn)  # s_{t-1}, (B, H)
        # (B, Dk), (B, S)
        context, att = self.attention(
            query, memory.states, memory.projected, memory.mask, state.step
        )
        s_t, rnn_state = self._recur(emb_t, x_proj_t, context, state.rnn, weights)  # (B, H)
        pre = torch.tanh(self.combine(torch.cat([s_t, context, emb_t], -1)))
        return self._drop(pre, keep_t), DecoderState(rnn_state, step=state.step + 1), att


class LuongDecoder(RNNDecoder):
    """Luong et al. (2015): the RNN steps first, on [y_{t-1}; h~_{t-1}] with input feeding
    (``model.input_feeding``) or on y_{t-1} alone; the new state h_t (B, H) queries the memory;
    the attentional vector h~_t = tanh(W_c [c_t; h_t]) (B, H) (``combine`` is W_c) feeds the
    output layer and, with input feeding, the next step.

    Without input feeding no step reads the previous attention: teacher forcing runs the RNN
    over the whole target in one call and the attention of all T steps as one batched matmul
    (:meth:`_forward_whole`).
    """

    style = "luong"

    def __init__(self, cfg: Seq2SeqConfig, vocab_size: int):
        super().__init__(cfg, vocab_size)
        self.input_feeding = cfg.input_feeding

    @property
    def has_handwritten_loop(self) -> bool:
        """The loop is for the input-fed decoder; without feeding the RNN runs in one call."""
        return self.input_feeding

    @property
    def steps_independent(self) -> bool:
        return not self.input_feeding

    def combine_width(self, cfg: Seq2SeqConfig) -> int:
        return cfg.memory_dim + cfg.decoder_hidden  # [c_t; h_t]

    def rnn_input_width(self, cfg: Seq2SeqConfig) -> int:
        fed = cfg.decoder_hidden if cfg.input_feeding else 0
        return cfg.embedding_dim + fed  # [y_{t-1}; h~_{t-1}] or y_{t-1}

    def _step(self, emb_t, state, memory, x_proj_t=None, keep_t=None, weights=None):
        """emb_t (B, E) -> h~_t (B, H), the next state (h~_t fed when input feeding), weights
        (B, S)."""
        h_t, rnn_state = self._recur(emb_t, x_proj_t, state.feed, state.rnn, weights)  # (B, H)
        context, att = self.attention(h_t, memory.states, memory.projected, memory.mask, state.step)
        # h~_t, (B, H)
        attn_vec = self._drop(torch.tanh(self.combine(torch.cat([context, h_t], -1))), keep_t)
        feed = attn_vec if self.input_feeding else None
        return attn_vec, DecoderState(rnn_state, feed, state.step + 1), att

    def _forward_whole(self, tgt_in, emb, state, memory):
        """No step depends on the previous attention: one RNN call over T, then attention for
        all T steps in one batched matmul. emb (B, T, E) -> logits (B, T, V), weights (B, T, S)."""
        if self.backend.trains_by_hand(emb):
            out = recurrence.over_target(self.rnn, tgt_in != PAD_ID, emb, state.rnn, self.training)
        else:
            out, _ = self.rnn(emb, state.rnn)  # (B, T, H)
        # (B, T, Dk), (B, T, S)
        context, weights = self.attention(
            out, memory.states, memory.projected, memory.mask, state.step
        )
        pre = self.dropout(torch.tanh(self.combine(torch.cat([context, out], -1))))  # (B, T, H)
        return self.output(pre), weights


class FixedContextDecoder(RNNDecoder):
    """No attention (Cho et al. 2014; Sutskever et al. 2014): c = the encoder's final state
    (``memory.final``, (B, Dk)) at every step; the RNN steps on [y_{t-1}; c]; the output reads
    tanh(W_o [s_t; c; y_{t-1}]) (``combine`` is W_o).

    It holds no attention module (``attention`` is None) and returns all-zero weights
    (B, S), so that decoding keeps one shape for every model; ``attends`` says they mean nothing.
    """

    style = "fixed"
    attends = False
    steps_independent = True  # the context never changes, so no step waits for the previous one

    def combine_width(self, cfg: Seq2SeqConfig) -> int:
        return cfg.decoder_hidden + cfg.memory_dim + cfg.embedding_dim  # [s_t; c; y_{t-1}]

    def rnn_input_width(self, cfg: Seq2SeqConfig) -> int:
        return cfg.embedding_dim + cfg.memory_dim  # [y_{t-1}; c]

    def project_keys(self, states: Tensor) -> None:
        return None  # nothing attends to the states

    def _step(self, emb_t, state, memory, x_proj_t=None, keep_t=None, weights=None):
        """emb_t (B, E) -> pre-output (B, H), the next state, zeros (B, S)."""
        context = memory.final  # c, (B, Dk)
        s_t, rnn_state = self._recur(emb_t, x_proj_t, context, state.rnn, weights)  # (B, H)
        pre = torch.tanh(self.combine(torch.cat([s_t, context, emb_t], -1)))
        step = state.step + 1
        return self._drop(pre, keep_t), DecoderState(rnn_state, step=step), _no_weights(memory)

    def _forward_whole(self, tgt_in, emb, state, memory):
        """One RNN call over T on [y_{t-1}; c], then the output layer for all T steps.
        emb (B, T, E) -> logits (B, T, V), weights (B, T, S) (zeros)."""
        steps = emb.size(1)
        context = memory.final.unsqueeze(1).expand(-1, steps, -1)  # (B, T, Dk)
        rnn_in = torch.cat([emb, context], -1)  # (B, T, E + Dk)
        if self.backend.trains_by_hand(emb):
            s = recurrence.over_target(self.rnn, tgt_in != PAD_ID, rnn_in, state.rnn, self.training)
        else:
            s, _ = self.rnn(rnn_in, state.rnn)  # (B, T, H)
        pre = self.dropout(torch.tanh(self.combine(torch.cat([s, context, emb], -1))))
        weights = _no_weights(memory).unsqueeze(1).expand(-1, steps, -1)  # (B, T, S)
        return self.output(pre), weights


def _no_weights(memory: Memory) -> Tensor:
    """(B, S) zeros: the weights of a decoder that attends to nothing."""
    return memory.states.new_zeros(memory.mask.shape)


#: model.decoder name -> class; ``auto`` in the config picks one from the attention
DECODERS: dict[str, type[RNNDecoder]] = {
    BahdanauDecoder.style: BahdanauDecoder,
    LuongDecoder.style: LuongDecoder,
    FixedContextDecoder.style: FixedContextDecoder,
}


def pairs_with(style: str, attention: str) -> bool:
    """Whether decoder ``style`` can hold ``attention``: the decoder without attention takes
    ``none`` and only it, every other decoder any real attention. The one rule for configs and
    for every place that iterates attentions x decoders."""
    return DECODERS[style].attends == (attention != NO_ATTENTION)
