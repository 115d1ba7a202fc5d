"""The copy switch of the pointer-generator (See, Liu & Manning 2017) on an RNN decoder.

``model.copy: true`` gives any attending decoder style of :mod:`attnkit.models.decoders` a switch
that, at every step t, chooses between writing a word of the vocabulary and copying a source
word by its attention:

    p_gen = sigmoid(w_c^T c_t + w_s^T s_t + w_x^T x_t + b)
    P(w)  = p_gen P_vocab(w) + (1 - p_gen) sum_{i: x_i = w} a_t,i

c_t = sum_i a_t,i h_i is the attention-weighted sum of the encoder states (See et al.'s context
h*_t), s_t the decoder's new (top-layer) state, x_t the embedded decoder input. P is over an
extended vocabulary: the source's ids (:mod:`attnkit.data.copy_ids`) give each word the
vocabulary lacks a temporary id ``V + j`` of its own example, so a word never seen in training
can still be written. The model embeds such ids as ``<unk>``.

The decoder returns log P where other decoders return logits: log-softmax leaves it unchanged,
so the loss, greedy decoding, beam search and forced decoding take it as they are. The copy
distribution is the attention renormalised over the source (local-p's Gaussian-scaled weights
sum to less than 1). Teacher forcing always runs the step loop (no fast backend has a copy
path); every step's p_gen rides on the decoder state (``DecoderState.p_gen``), where decoding
reads it.

Shapes: B batch, S source length, T target length, V vocab, Vx extended vocab (V + the most
unknown source words of a row), Dk encoder state width, H decoder hidden, E embedding width.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

import torch
from torch import Tensor, nn

from attnkit.accel import cells
from attnkit.data.vocab import UNK_ID
from attnkit.models.rnn_decoder import DecoderState, RNNDecoder, top_layer

if TYPE_CHECKING:
    from attnkit.models.seq2seq import Memory, Seq2SeqConfig

#: the smallest probability whose log is taken: an extended id no source word holds has
#: probability 0, whose log would make label smoothing's loss infinite
TINY = 1e-30


def mixture(p_vocab: Tensor, weights: Tensor, p_gen: Tensor, copy_ids: Tensor, size: int) -> Tensor:
    """P(w) = p_gen P_vocab(w) + (1 - p_gen) * the attention on the source positions holding w.

    p_vocab (N, V) a distribution; weights (N, S) attention (renormalised here); p_gen (N,);
    copy_ids (N, S) each source position's extended id; ``size`` Vx >= V -> (N, Vx), summing
    to 1 in every row.
    """
    n, vocab = p_vocab.shape
    attention = weights / weights.sum(-1, keepdim=True).clamp_min(TINY)  # (N, S)
    gate = p_gen.unsqueeze(-1)  # (N, 1)
    generated = torch.cat([gate * p_vocab, p_vocab.new_zeros(n, size - vocab)], -1)  # (N, Vx)
    return generated.scatter_add(1, copy_ids, (1 - gate) * attention)


class CopyingDecoder(RNNDecoder):
    """The copy switch over a decoder style; :func:`copying` makes the class for one style (its
    ``_step`` is the style's; ``forward`` and ``step`` are the switch's)."""

    def __init__(self, cfg: Seq2SeqConfig, vocab_size: int):
        super().__init__(cfg, vocab_size)
        # [c_t; s_t; x_t] -> the logit of p_gen: See et al.'s w_c, w_s, w_x and b in one layer
        self.switch = nn.Linear(cfg.memory_dim + cfg.decoder_hidden + cfg.embedding_dim, 1)

    def _known(self, tokens: Tensor) -> Tensor:
        """Extended ids (words of the source only) read as ``<unk>``: (B, ...) -> (B, ...)."""
        return tokens.masked_fill(tokens >= self.output.out_features, UNK_ID)

    def p_gen(self, context: Tensor, state: Tensor, emb: Tensor) -> Tensor:
        """context (..., Dk), state (..., H), emb (..., E) -> p_gen (...) in [0, 1]."""
        return torch.sigmoid(self.switch(torch.cat([context, state, emb], -1))).squeeze(-1)

    def _log_mixture(
        self, logits: Tensor, weights: Tensor, p_gen: Tensor, memory: Memory
    ) -> Tensor:
        """logits (N, V), weights (N, S), p_gen (N,) of the rows of ``memory`` (N = B), or of all
        their steps ((B, T, ...) flattened, N = B*T) -> log P (N, Vx)."""
        ids = memory.copy_ids  # (B, S)
        if ids.size(0) != logits.size(0):  # every step of a row copies from the same source
            ids = ids.repeat_interleave(logits.size(0) // ids.size(0), 0)  # (B*T, S)
        p_vocab = torch.softmax(logits.float(), -1)
        p = mixture(p_vocab, weights.float(), p_gen.float(), ids, memory.extended)
        return p.clamp_min(TINY).log()

    def forward(self, tgt_in: Tensor, state: DecoderState, memory: Memory) -> tuple[Tensor, Tensor]:
        """Teacher forcing: tgt_in (B, T) (extended ids allowed) -> log P (B, T, Vx), attention
        weights (B, T, S)."""
        with self.backend.scope():
            emb = self.dropout(self.embed(self._known(tgt_in)))  # (B, T, E)
            pre, weights, tops = self._steps(emb, state, memory)
            context = torch.bmm(weights, memory.states)  # (B, T, Dk)
            p_gen = self.p_gen(context, tops, emb)  # (B, T)
            b, t = tgt_in.shape
            logp = self._log_mixture(
                self.output(pre).flatten(0, 1), weights.flatten(0, 1), p_gen.flatten(), memory
            )
            return logp.view(b, t, -1), weights

    def _steps(
        self, emb: Tensor, state: DecoderState, memory: Memory
    ) -> tuple[Tensor, Tensor, Tensor]:
        """The style's step loop (as :meth:`RNNDecoder._forward_steps`), keeping every step's
        new top-layer state: emb (B, T, E) -> pre-outputs (B, T, H), weights (B, T, S), states
        s_t (B, T, H)."""
        steps = emb.size(1)
        embs = emb.unbind(1)
        x_projs = keeps = [None] * steps
        weights = None
        if self.fused:
            x_projs = cells.project_inputs(self.rnn, emb).unbind(1)  # (B, G*H) each
            keep = self.dropout_masks(emb.size(0), steps, emb)  # (T, B, H) or None
            keeps = keeps if keep is None else keep.unbind(0)
            weights = cells.cell_weights(self.rnn, self.embed.embedding_dim)
        pres, atts, tops = [], [], []
        for t in range(steps):
            pre, state, att = self._step(embs[t], state, memory, x_projs[t], keeps[t], weights)
            pres.append(pre)
            atts.append(att)
            tops.append(top_layer(state.rnn))
        return torch.stack(pres, 1), torch.stack(atts, 1), torch.stack(tops, 1)

    def step(
        self, prev_tokens: Tensor, state: DecoderState, memory: Memory
    ) -> tuple[Tensor, DecoderState, Tensor]:
        """prev_tokens (B,) (extended ids allowed) -> log P (B, Vx), the new state (carrying
        this step's p_gen (B,)), weights (B, S)."""
        prev = self._known(prev_tokens)
        with self.backend.scope():
            emb, x_proj = self.step_input(prev, memory)  # the switch reads what the step read
            pre, state, att = self._step(emb, state, memory, x_proj)
            # c_t again from the weights: the styles' steps return h~_t, not the context
            context = torch.bmm(att.unsqueeze(1), memory.states).squeeze(1)  # (B, Dk)
            p_gen = self.p_gen(context, top_layer(state.rnn), emb)  # (B,)
            logp = self._log_mixture(self.output(pre), att, p_gen, memory)
        return logp, replace(state, p_gen=p_gen), att


_COPYING: dict[type[RNNDecoder], type[RNNDecoder]] = {}


def copying(style: type[RNNDecoder]) -> type[RNNDecoder]:
    """The decoder class of ``style`` with the copy switch (one class per style)."""
    if style not in _COPYING:
        name = f"Copying{style.__name__}"
        _COPYING[style] = type(name, (CopyingDecoder, style), {"__doc__": CopyingDecoder.__doc__})
    return _COPYING[style]
