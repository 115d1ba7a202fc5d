"""What every decoder style of the seq2seq model shares: :class:`RNNDecoder`, the state it
carries from step to step (:class:`DecoderState`), and the RNN it steps (:func:`make_rnn`).

A style (:mod:`attnkit.models.decoders`: ``bahdanau``, ``luong``, ``fixed``) subclasses
:class:`RNNDecoder` and adds only what makes it that style: the widths of its RNN input and of
its output layer's input, and :meth:`RNNDecoder._step`, one step's equations. Everything else
is here, the same for every style:

* the embeddings, the bridge from the encoder (s_0 = tanh(W_b [final forward state; final
  backward state]), for every decoder layer), the attention module the style holds, the output
  layer and dropout, registered in that order (checkpoints and optimizer states rely on it);
* teacher forcing (:meth:`RNNDecoder.forward`: the whole target at once, for training and
  forced decoding) and one-step decoding (:meth:`RNNDecoder.step`: greedy and beam search call
  it once per output token);
* how the same function is computed. The backend (:mod:`attnkit.accel.backend`, set by
  ``Seq2Seq.set_backend``) decides: ``reference`` calls ``nn.GRU``/``nn.LSTM`` once per step;
  the others step through :func:`attnkit.accel.cells.fused_step` (on a CPU), with the input
  projection of every step hoisted out of the loop into one matmul, and run a style whose steps
  do not read the previous attention (``steps_independent``) as one RNN call over the target;
  ``native`` trains a one-layer decoder on a CPU through the handwritten-backward loop of
  :mod:`attnkit.accel.loops` where the style has one and its attention declares its scores
  (:meth:`RNNDecoder.loop_spec`); ``compile`` compiles :meth:`RNNDecoder._step`. Every backend
  computes the reference's function (``tests/unit/test_equivalence.py``).

Shapes: B batch (B*K rows in beam search), S source length, T target length, E embedding width,
H decoder hidden, Dk encoder state width (hidden x directions), V target vocab, L decoder layers,
G the RNN's gates (3 for a GRU, 4 for an LSTM).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import torch
from torch import Tensor, nn

from attnkit.accel import cells, loops
from attnkit.accel.backend import DEFAULT, Backend
from attnkit.accel.loops import LoopSpec
from attnkit.attention import build_attention
from attnkit.attention.dropout import Dropout, keep_mask
from attnkit.data.vocab import PAD_ID

if TYPE_CHECKING:
    from attnkit.models.seq2seq import Memory, Seq2SeqConfig


@dataclass
class DecoderState:
    """What a decoder carries from one step to the next.

    rnn: the RNN's state, (L, B, H) for a GRU, or an (h, c) pair of them for an LSTM.
    feed: (B, H) the attentional vector h~_{t-1} that input feeding (Luong) adds to the next
    step's input, or None for a style without it.
    step: the target position t the next step writes (every row of a batch or beam is at the
    same one), which position-aware attentions read (local-m's p_t = t).
    p_gen: (B,) the copy switch of the step that made this state (a copying decoder's,
    :mod:`attnkit.models.copy`), or None.
    """

    rnn: Any
    feed: Tensor | None = None
    step: int = 0
    p_gen: Tensor | None = None

    def index_select(self, index: Tensor) -> DecoderState:
        """The rows in ``index`` order (beam search keeps, reorders and repeats rows)."""
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
    """A batch-first ``nn.GRU`` or ``nn.LSTM`` (``kind``), dropout between layers only (the
    encoder's too: :class:`attnkit.models.seq2seq.Encoder`)."""
    cls = {"gru": nn.GRU, "lstm": nn.LSTM}[kind]
    return cls(
        input_size,
        hidden,
        num_layers=layers,
        batch_first=True,
        bidirectional=bidirectional,
        dropout=dropout if layers > 1 else 0.0,
    )


def top_layer(rnn_state: Any) -> Tensor:
    """(B, H): the top layer's hidden state of :attr:`DecoderState.rnn` (h for an LSTM): the
    query of a style whose previous state queries the memory (Bahdanau's s_{t-1})."""
    h = rnn_state[0] if isinstance(rnn_state, tuple) else rnn_state
    return h[-1]


class RNNDecoder(nn.Module):
    """What every decoder style shares; a style sets :attr:`style`, its layer widths
    (:meth:`combine_width`, :meth:`rnn_input_width`) and :meth:`_step`.

    Public API: ``init_state(final)`` (B, Dk) -> the first state; ``forward(tgt_in, state,
    memory)`` for teacher forcing, tgt_in (B, T) -> logits (B, T, V) and attention weights
    (B, T, S); ``step(prev_tokens, state, memory)`` for decoding, prev_tokens (B,) -> logits
    (B, V), the next state and weights (B, S). ``memory`` is the encoder's side, computed once
    per source batch (:class:`attnkit.models.seq2seq.Memory`: states (B, S, Dk), the attention's
    projected keys, mask (B, S)).

    Parameters are registered in the order embed, bridge, attention, combine, rnn, output
    (checkpoints and optimizer states rely on it; ``tests/unit/test_decoders.py`` holds the
    names and shapes that checkpoints written before carry).
    """

    #: the name under which :data:`attnkit.models.decoders.DECODERS` holds the class (what
    #: ``model.decoder`` says)
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
        """The input width of ``combine``, the layer before the output (what the style
        concatenates there: [s_t; c_t; y_{t-1}] for Bahdanau, [c_t; h_t] for Luong)."""
        raise NotImplementedError

    def rnn_input_width(self, cfg: Seq2SeqConfig) -> int:
        """The width of the RNN's input at each step (the embedding E, and what the style adds
        to it: the context Dk, or the fed attentional vector H)."""
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
        """final (B, Dk), the encoder's final state -> the first state: s_0 = tanh(W_b final)
        for every layer, (L, B, H) (an LSTM's cell starts at zeros), and a zero fed vector
        (B, H) for a style with input feeding."""
        b = final.size(0)
        h0 = torch.tanh(self.bridge(final)).view(b, self.layers, self.hidden)
        h0 = h0.transpose(0, 1).contiguous()  # (L, B, H)
        rnn_state = (h0, torch.zeros_like(h0)) if self.lstm else h0
        feed = final.new_zeros(b, self.hidden) if self.input_feeding else None
        return DecoderState(rnn_state, feed)

    def project_keys(self, states: Tensor) -> Any:
        """What the attention precomputes of the memory states (B, S, Dk), once per batch
        (``Memory.projected``: the keys, never cached on the module, so that beam search and
        ensembles can reorder and share them)."""
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
        """One RNN step on the input [emb_t; extra] -> (the top layer's output (B, H), the new
        state). emb_t (B, E); ``extra`` what the style adds to the input, the context c_t
        (B, Dk) or the fed vector h~_{t-1} (B, H), or None.

        ``x_proj_t`` (B, G*H) and ``weights``: :func:`cells.project_inputs` of emb_t and
        :func:`cells.cell_weights`, where the caller computed them once for all steps (the fused
        cells only; ``nn.GRU``/``nn.LSTM`` take the concatenated input).
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
        """Dropout on x (B, H): the module's own draw, or ``keep``, a mask drawn in advance."""
        return self.dropout(x) if keep is None else x * keep

    def dropout_masks(self, b: int, t: int, like: Tensor) -> Tensor | None:
        """(T, B, H) inverted-dropout masks (already scaled by 1/(1-p)) for every step in one
        draw, or None when dropout is off (evaluation, or p = 0)."""
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
        """One decoding step: prev_tokens (B,), the tokens the last step chose (<s> first) ->
        logits (B, V), the new state, and this step's attention weights (B, S)."""
        with self.backend.scope():
            emb_t, x_proj_t = self.step_input(prev_tokens, memory)
            pre, state, weights = self._step(emb_t, state, memory, x_proj_t)
            return self.output(pre), state, weights

    def step_input(self, prev_tokens: Tensor, memory: Memory) -> tuple[Tensor, Tensor | None]:
        """prev_tokens (B,) -> the step's input: the embedding (B, E), and where decoding built
        ``memory.input_table``, its projection by layer 0's input weights (B, G*H), looked up
        rather than computed; else None (the step computes it)."""
        emb_t = self.dropout(self.embed(prev_tokens))  # (B, E)
        if memory.input_table is None:
            return emb_t, None
        return emb_t, memory.input_table.index_select(0, prev_tokens)  # a lookup, not a matmul

    def input_table(self, rows: int) -> Tensor | None:
        """(V, G*H): every token's embedding through layer 0's input weights, or None where it
        does not pay.

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
        """Teacher forcing: tgt_in (B, T), the target shifted right (<s> first) -> logits
        (B, T, V) and the attention weights of every step (B, T, S).

        The backend picks the path: one RNN call over the target for a style whose steps are
        independent (:meth:`_forward_whole`), the handwritten-backward loop where it applies
        (:meth:`loop_spec`), else the step loop (:meth:`_forward_steps`)."""
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
        """Teacher forcing in one pass over T, for a style whose ``steps_independent``: emb
        (B, T, E) -> logits (B, T, V), weights (B, T, S)."""
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
