"""The attention decoders of the seq2seq model, one class per style, found by name in
:data:`DECODERS` (``model.decoder``).

Every decoder holds any attention from :mod:`attnkit.attention` and starts from the encoder
through a learned bridge: s_0 = tanh(W_b [final forward state; final backward state]).

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

:class:`RNNDecoder` holds what the styles share (embeddings, bridge, the recurrent step, dropout,
teacher forcing and one-step decoding, the backend); a style adds its layer sizes and its
``_step``. The backend (:mod:`attnkit.accel.backend`, set by ``Seq2Seq.set_backend``) decides how
the same function is computed: ``reference`` calls ``nn.GRU``/``nn.LSTM`` once per step; the
others step through :func:`attnkit.accel.cells.fused_step` (on a CPU) and run a decoder whose steps
do not read the previous attention as one RNN call over the target; ``native`` trains a one-layer
decoder on a CPU through the handwritten-backward loop of :mod:`attnkit.accel.loops` where the
style has one and its attention declares its scores (``loop_spec()``); ``compile`` compiles
:meth:`RNNDecoder._step`.

Shapes: B batch, S source length, T target length, E embedding width, H decoder hidden,
Dk encoder state width (hidden x directions), V vocab, L decoder layers.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import torch
from torch import Tensor, nn

from attnkit.accel import cells, loops, recurrence
from attnkit.accel.backend import DEFAULT, Backend
from attnkit.accel.loops import LoopSpec
from attnkit.attention import build_attention
from attnkit.attention.dropout import Dropout, keep_mask
from attnkit.attention.modules import NO_ATTENTION
from attnkit.data.vocab import PAD_ID

if TYPE_CHECKING:
    from attnkit.models.seq2seq import Memory, Seq2SeqConfig


@dataclass
class DecoderState:
    """rnn: (L, B, H) for GRU or a pair of them for LSTM; feed: (B, H) the input-fed vector or
    None; step: the target position t the next step writes (every row of a batch or beam is at
    the same one), which position-aware attentions read (local-m's p_t = t); p_gen: (B,) the copy
    switch of the step that made this state (a copying decoder's, :mod:`attnkit.models.copy`)."""

    rnn: Any
    feed: Tensor | None = None
    step: int = 0
    p_gen: Tensor | None = None

    def index_select(self, index: Tensor) -> DecoderState:
        rnn = self.rnn
        if isinstance(rnn, tuple):
            rnn = tuple(x.index_select(1, index) for x in rnn)
        else:
            rnn = rnn.index_select(1, index)
        feed = None if self.feed is None else self.feed.index_select(0, index)
        p_gen = None if self.p_gen is None else self.p_gen.index_select(0, index)
        return DecoderState(rnn, feed, self.step, p_gen)


def make_rnn(
    kind: str, input_size: int, hidden: int, layers: int, dropout: float, bidirectional=False
) -> nn.RNNBase:
    """A batch-first ``nn.GRU`` or ``nn.LSTM`` (``kind``), dropout between layers only."""
    cls = {"gru": nn.GRU, "lstm": nn.LSTM}[kind]
    return cls(
        input_size,
        hidden,
        num_layers=layers,
        batch_first=True,
        bidirectional=bidirectional,
        dropout=dropout if layers > 1 else 0.0,
    )


def _top_layer(rnn_state: Any) -> Tensor:
    """(B, H): the top layer's hidden state (h for LSTM)."""
    h = rnn_state[0] if isinstance(rnn_state, tuple) else rnn_state
    return h[-1]


class RNNDecoder(nn.Module):
    """What every decoder style shares; a style sets :attr:`style`, its layer widths and
    :meth:`_step`.

    Public API: ``init_state(final)``, ``forward(tgt_in, state, memory)`` for teacher forcing and
    ``step(prev_tokens, state, memory)`` for decoding. Parameters are registered in the order
    embed, bridge, attention, combine, rnn, output (checkpoints and optimizer states rely on it).
    """

    #: the name under which :data:`DECODERS` holds the class
    style = ""
    #: whether :mod:`attnkit.accel.loops` has a handwritten-backward loop for this style
    has_handwritten_loop = False
    #: the form of a step, for that loop: the previous state queries the memory before the RNN
    #: step, whose input takes the context (Bahdanau), rather than the new state after it (Luong)
    attends_before_step = False
    #: whether no step reads the previous step's attention, so the RNN can run over the whole
    #: target in one call (:meth:`_forward_whole`)
    steps_independent = False
    #: whether the state carries the previous attentional vector into the next input (Luong)
    input_feeding = False
    #: whether the decoder holds an attention (False: ``model.attention: none``, and the weights
    #: its steps return are zeros that nothing may read as attention)
    attends = True

    def __init__(self, cfg: Seq2SeqConfig, vocab_size: int):
        super().__init__()
        self.lstm = cfg.rnn == "lstm"
        self.layers = cfg.decoder_layers
        self.hidden = cfg.decoder_hidden
        memory_dim = cfg.memory_dim
        self.embed = nn.Embedding(vocab_size, cfg.embedding_dim, padding_idx=PAD_ID)
        self.dropout = Dropout(cfg.dropout)
        self.bridge = nn.Linear(memory_dim, self.layers * self.hidden)
        sizes = (self.hidden, memory_dim, cfg.attention_dim, cfg.heads)
        self.attention = (
            build_attention(cfg.attention, *sizes, cfg.attention_options) if self.attends else None
        )
        self.combine = nn.Linear(self.combine_width(cfg), self.hidden)
        self.rnn = make_rnn(
            cfg.rnn, self.rnn_input_width(cfg), self.hidden, self.layers, cfg.dropout
        )
        self.output = nn.Linear(self.hidden, vocab_size)
        self.backend = DEFAULT

    def combine_width(self, cfg: Seq2SeqConfig) -> int:
        """The input width of ``combine``, the layer before the output."""
        raise NotImplementedError

    def rnn_input_width(self, cfg: Seq2SeqConfig) -> int:
        """The width of the RNN's input at each step."""
        raise NotImplementedError

    def _step(
        self,
        emb_t: Tensor,
        state: DecoderState,
        memory: Memory,
        x_proj_t: Tensor | None = None,
        keep_t: Tensor | None = None,
        weights: list | None = None,
    ) -> tuple[Tensor, DecoderState, Tensor]:
        """One step given the embedded previous token: emb_t (B, E) -> pre-output (B, H), new
        state, attention weights (B, S) (zeros for a decoder that does not attend).

        ``x_proj_t`` and ``weights``: as :meth:`_recur` takes them; ``keep_t`` (B, H): a dropout
        mask already scaled by 1/(1-p), drawn for all steps at once.
        """
        raise NotImplementedError

    @property
    def fused(self) -> bool:
        """Whether steps go through the fused cells (see :class:`attnkit.accel.backend.Backend`)."""
        return self.backend.cell != "nn"

    def set_backend(self, backend: Backend) -> None:
        """Compute with ``backend`` from now on; ``compile`` replaces :meth:`_step` on this
        instance by its ``torch.compile`` version (dynamic shapes: one graph for any batch and
        source length), any other backend restores the eager one. The weights are unchanged."""
        self.__dict__.pop("_step", None)
        if backend.compiled:
            self._step = torch.compile(self._step, dynamic=True)
        self.backend = backend

    # ---- state ---------------------------------------------------------
    def init_state(self, final: Tensor) -> DecoderState:
        """final (B, Dk) -> s_0 of every layer through the bridge."""
        b = final.size(0)
        h0 = torch.tanh(self.bridge(final)).view(b, self.layers, self.hidden)
        h0 = h0.transpose(0, 1).contiguous()  # (L, B, H)
        rnn_state = (h0, torch.zeros_like(h0)) if self.lstm else h0
        feed = final.new_zeros(b, self.hidden) if self.input_feeding else None
        return DecoderState(rnn_state, feed)

    def project_keys(self, states: Tensor) -> Any:
        """What the attention precomputes of the memory states (B, S, Dk), once per batch."""
        return self.attention.project_keys(states)

    # ---- the recurrent step ----------------------------------------------------
    def _recur(
        self,
        emb_t: Tensor,
        x_proj_t: Tensor | None,
        extra: Tensor | None,
        rnn_state: Any,
        weights: list | None = None,
    ):
        """One RNN step on input [emb_t; extra] -> (top output (B, H), new state).

        ``x_proj_t`` (B, G*H) and ``weights``: :func:`cells.project_inputs` of emb_t and
        :func:`cells.cell_weights`, where the caller computed them once for all steps.
        """
        if not self.fused:
            rnn_in = emb_t if extra is None else torch.cat([emb_t, extra], -1)
            out, rnn_state = self.rnn(rnn_in.unsqueeze(1), rnn_state)
            return out.squeeze(1), rnn_state
        if x_proj_t is None:
            x_proj_t = cells.project_inputs(self.rnn, emb_t)
        if weights is None:
            weights = cells.cell_weights(self.rnn, self.embed.embedding_dim)
        return cells.fused_step(self.rnn, x_proj_t, extra, rnn_state, weights, self.training)

    def _drop(self, x: Tensor, keep: Tensor | None) -> Tensor:
        return self.dropout(x) if keep is None else x * keep

    def dropout_masks(self, b: int, t: int, like: Tensor) -> Tensor | None:
        """(T, B, H) inverted-dropout masks for every step in one draw (None when dropout is
        off)."""
        p = self.dropout.p
        if not self.training or p == 0.0:
            return None
        return keep_mask((t, b, self.hidden), p, like)

    def loop_spec(self) -> LoopSpec | None:
        """What the handwritten-backward loop computes for this decoder, or None where the
        backend or the style has no such loop, the decoder has more than one layer, or the
        attention declares no scores."""
        if not (self.backend.handwritten_loop and self.has_handwritten_loop and self.layers == 1):
            return None
        score = self.attention.loop_spec()
        if score is None:
            return None
        return LoopSpec.of(self.lstm, score, attends_first=self.attends_before_step)

    # ---- decoding ------------------------------------------------------------
    def step(
        self, prev_tokens: Tensor, state: DecoderState, memory: Memory
    ) -> tuple[Tensor, DecoderState, Tensor]:
        """prev_tokens (B,) -> logits (B, V), new state, weights (B, S)."""
        with self.backend.scope():
            emb_t, x_proj_t = self.step_input(prev_tokens, memory)
            pre, state, weights = self._step(emb_t, state, memory, x_proj_t)
            return self.output(pre), state, weights

    def step_input(self, prev_tokens: Tensor, memory: Memory) -> tuple[Tensor, Tensor | None]:
        """prev_tokens (B,) -> embedding (B, E), its layer-0 input projection (B, G*H) or None."""
        table = memory.input_table  # (V, G*H) where decoding built it: a lookup, not a matmul
        x_proj_t = None if table is None else table.index_select(0, prev_tokens)
        return self.dropout(self.embed(prev_tokens)), x_proj_t

    def input_table(self, rows: int) -> Tensor | None:
        """(V, G*H): every token's embedding through layer 0's input weights (None: no gain).

        Decoding without dropout or gradients makes the projection a function of the token
        alone, so a step can look it up. It is built per decoding call (``rows`` = batch x source
        length, a proxy for the lookups to come) when the vocabulary is no larger than that, and
        never cached across calls: an in-place optimizer step (fused Adam leaves ``_version``
        unchanged) cannot leave it stale.
        """
        if not self.fused or self.training or torch.is_grad_enabled():
            return None
        if self.embed.num_embeddings > rows:  # building it costs more matmul rows than it saves
            return None
        return cells.project_inputs(self.rnn, self.embed.weight)

    # ---- teacher forcing ---------------------------------------------------
    def forward(self, tgt_in: Tensor, state: DecoderState, memory: Memory) -> tuple[Tensor, Tensor]:
        """tgt_in (B, T) -> logits (B, T, V), weights (B, T, S)."""
        with self.backend.scope():
            emb = self.dropout(self.embed(tgt_in))  # (B, T, E), embedded once for all steps
            if self.steps_independent and self.backend.whole_target:
                return self._forward_whole(tgt_in, emb, state, memory)
            spec = self.loop_spec() if self.backend.trains_by_hand(emb) else None
            if spec is not None:
                return loops.teacher_force(self, spec, tgt_in, emb, state, memory)
            return self._forward_steps(tgt_in, emb, state, memory)

    def _forward_whole(
        self, tgt_in: Tensor, emb: Tensor, state: DecoderState, memory: Memory
    ) -> tuple[Tensor, Tensor]:
        """Teacher forcing in one pass over T, for a style whose ``steps_independent``."""
        raise NotImplementedError

    def _forward_steps(
        self, tgt_in: Tensor, emb: Tensor, state: DecoderState, memory: Memory
    ) -> tuple[Tensor, Tensor]:
        """The step loop, autograd: emb (B, T, E) -> logits (B, T, V), weights (B, T, S)."""
        # Per-step inputs are unbound once: indexing [:, t] inside the loop would
        # make autograd zero-fill a full (B, T, ...) gradient for every step.
        steps = tgt_in.size(1)
        embs = emb.unbind(1)
        x_projs = keeps = [None] * steps
        weights = None
        if self.fused:
            x_projs = cells.project_inputs(self.rnn, emb).unbind(1)  # (B, G*H) each: one matmul
            keep = self.dropout_masks(tgt_in.size(0), steps, emb)  # (T, B, H) or None
            keeps = keeps if keep is None else keep.unbind(0)
            weights = cells.cell_weights(self.rnn, self.embed.embedding_dim)
        pres, all_weights = [], []
        for t in range(steps):
            pre, state, att = self._step(embs[t], state, memory, x_projs[t], keeps[t], weights)
            pres.append(pre)
            all_weights.append(att)
        pre = torch.stack(pres, 1)  # (B, T, H)
        return self.output(pre), torch.stack(all_weights, 1)  # output layer once for all steps


class BahdanauDecoder(RNNDecoder):
    """s_{t-1} queries the memory; the RNN steps on [y_{t-1}; c_t]; the output reads
    tanh(W_o [s_t; c_t; y_{t-1}]) (``combine`` is W_o)."""

    style = "bahdanau"
    has_handwritten_loop = True
    attends_before_step = True

    def combine_width(self, cfg: Seq2SeqConfig) -> int:
        return cfg.decoder_hidden + cfg.memory_dim + cfg.embedding_dim  # [s_t; c_t; y_{t-1}]

    def rnn_input_width(self, cfg: Seq2SeqConfig) -> int:
        return cfg.embedding_dim + cfg.memory_dim  # [y_{t-1}; c_t]

    def _step(self, emb_t, state, memory, x_proj_t=None, keep_t=None, weights=None):
        query = _top_layer(state.rnn)  # s_{t-1}, (B, H)
        # (B, Dk), (B, S)
        context, att = self.attention(
            query, memory.states, memory.projected, memory.mask, state.step
        )
        s_t, rnn_state = self._recur(emb_t, x_proj_t, context, state.rnn, weights)  # (B, H)
        pre = torch.tanh(self.combine(torch.cat([s_t, context, emb_t], -1)))
        return self._drop(pre, keep_t), DecoderState(rnn_state, step=state.step + 1), att


class LuongDecoder(RNNDecoder):
    """The RNN steps on [y_{t-1}; h~_{t-1}] (input feeding) or y_{t-1}; h_t queries the memory;
    h~_t = tanh(W_c [c_t; h_t]) (``combine`` is W_c) feeds the output layer."""

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
    """No attention: c = the encoder's final state (``memory.final``) at every step; the RNN
    steps on [y_{t-1}; c]; the output reads tanh(W_o [s_t; c; y_{t-1}]) (``combine`` is W_o).

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
