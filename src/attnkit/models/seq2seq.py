"""RNN encoder-decoder with attention, readable top to bottom.

Encoder: embeddings -> GRU/LSTM (layers, optionally bidirectional, packed so
padding never enters the states). Its states are the attention memory.

Two decoder styles, both holding any attention from :mod:`attnkit.attention`:

* ``bahdanau`` (Bahdanau et al. 2015): the previous state s_{t-1} queries the
  memory, the context c_t enters the RNN input [y_{t-1}; c_t], and the output
  reads tanh(W_o [s_t; c_t; y_{t-1}]).
* ``luong`` (Luong et al. 2015): the RNN steps first on [y_{t-1}; h~_{t-1}]
  (input feeding) or y_{t-1} alone; the new state h_t queries the memory; the
  attentional vector h~_t = tanh(W_c [c_t; h_t]) feeds the output layer. Without
  input feeding the fast backends run the RNN over the whole target in one call
  and attention for all steps as one batched matmul.

The decoder state starts from the encoder through a learned bridge:
s_0 = tanh(W_b [final forward state; final backward state]).

Shapes: B batch, S source length, T target length, E embedding width,
H decoder hidden, Dk encoder state width (hidden x directions), V vocab.

How it is computed is the backend's affair (:mod:`attnkit.accel.backend`, chosen by
``train.backend``/``decode.backend`` through :meth:`Seq2Seq.set_backend`); every backend
computes this same function.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch
from torch import Tensor, nn
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

from attnkit.accel import cells, loops, recurrence
from attnkit.accel.backend import DEFAULT, Backend
from attnkit.accel.loops import LoopSpec
from attnkit.attention import build_attention
from attnkit.attention.modules import ATTENTION_TYPES
from attnkit.config import join_key
from attnkit.data.vocab import PAD_ID
from attnkit.errors import ConfigError
from attnkit.models.dropout import Dropout, keep_mask


@dataclass
class Seq2SeqConfig:
    """The model section of an experiment file."""

    attention: str = (
        "bahdanau"  # bahdanau | luong-dot | luong-general | luong-concat | scaled-dot | multihead
    )
    decoder: str = "auto"  # bahdanau | luong | auto (bahdanau for bahdanau attention, else luong)
    rnn: str = "gru"  # gru | lstm
    embedding_dim: int = 64
    encoder_hidden: int = 128  # per direction
    encoder_layers: int = 1
    bidirectional: bool = True
    decoder_hidden: int = 256
    decoder_layers: int = 1
    attention_dim: int = 128  # width of additive/projected attention spaces
    heads: int = 4  # multihead only
    input_feeding: bool = True  # luong decoder only
    dropout: float = 0.1

    CHOICES = {
        "attention": tuple(ATTENTION_TYPES),
        "decoder": ("auto", "bahdanau", "luong"),
        "rnn": ("gru", "lstm"),
    }
    #: keys that only some attentions / decoders read (see attnkit.config.check_applicable)
    APPLIES = {
        "heads": ("attention", ("multihead",)),
        "input_feeding": ("decoder_style", ("luong",), "decoder"),
    }

    def validate(self, where: str) -> None:
        for name in (
            "embedding_dim",
            "encoder_hidden",
            "encoder_layers",
            "decoder_hidden",
            "decoder_layers",
            "attention_dim",
            "heads",
        ):
            if getattr(self, name) < 1:
                raise ConfigError(
                    f"{join_key(where, name)}: must be at least 1, got {getattr(self, name)}"
                )
        if not 0.0 <= self.dropout < 1.0:
            raise ConfigError(
                f"{join_key(where, 'dropout')}: must be in [0, 1), got {self.dropout}"
            )

    @property
    def decoder_style(self) -> str:
        if self.decoder != "auto":
            return self.decoder
        return "bahdanau" if self.attention == "bahdanau" else "luong"

    @property
    def memory_dim(self) -> int:
        return self.encoder_hidden * (2 if self.bidirectional else 1)


@dataclass
class Memory:
    """What the decoder attends to, computed once per source batch.

    states (B, S, Dk); projected: the attention's precomputed keys; mask (B, S) bool;
    input_table (V, G*H) or None: every target token's layer-0 input gates, for decoding
    (:meth:`Decoder.input_table`). It lives exactly as long as one decoding call's memory,
    so no weight update can ever meet a stale table.
    """

    states: Tensor
    projected: Any
    mask: Tensor
    input_table: Tensor | None = None

    def index_select(self, index: Tensor) -> Memory:
        """Rows in ``index`` order (beam search expands B to B*K); the token table has no rows."""
        return Memory(
            self.states.index_select(0, index),
            _index_select(self.projected, index),
            self.mask.index_select(0, index),
            self.input_table,
        )


def _index_select(x: Any, index: Tensor, dim: int = 0) -> Any:
    if x is None:
        return None
    if isinstance(x, (tuple, list)):
        return type(x)(_index_select(v, index, dim) for v in x)
    return x.index_select(dim, index)


@dataclass
class DecoderState:
    """rnn: (L, B, H) for GRU or a pair of them for LSTM; feed: (B, H) the input-fed vector or
    None."""

    rnn: Any
    feed: Tensor | None = None

    def index_select(self, index: Tensor) -> DecoderState:
        return DecoderState(_index_select(self.rnn, index, dim=1), _index_select(self.feed, index))


def _fast_training(backend: Backend, x: Tensor) -> bool:
    """Whether the handwritten-backward loops run for input ``x``: the backend has them, on the CPU,
    with autograd recording (they exist for training; decoding needs no backward)."""
    return backend.handwritten_loop and x.device.type == "cpu" and torch.is_grad_enabled()


def _top_layer(rnn_state: Any) -> Tensor:
    """(B, H): the top layer's hidden state (h for LSTM)."""
    h = rnn_state[0] if isinstance(rnn_state, tuple) else rnn_state
    return h[-1]


def _rnn(
    kind: str,
    input_size: int,
    hidden: int,
    layers: int,
    dropout: float,
    bidirectional: bool = False,
):
    cls = {"gru": nn.GRU, "lstm": nn.LSTM}[kind]
    return cls(
        input_size,
        hidden,
        num_layers=layers,
        batch_first=True,
        bidirectional=bidirectional,
        dropout=dropout if layers > 1 else 0.0,
    )


class Encoder(nn.Module):
    """Embeddings + (bi)RNN over the padded source; padding is packed away.

    With the ``native`` backend, training on a CPU runs the RNN through
    :func:`attnkit.accel.recurrence.encode` (same parameters, same function, one autograd node per
    layer with a hand-derived backward).
    """

    def __init__(self, cfg: Seq2SeqConfig, vocab_size: int):
        super().__init__()
        self.embed = nn.Embedding(vocab_size, cfg.embedding_dim, padding_idx=PAD_ID)
        self.dropout = Dropout(cfg.dropout)
        self.rnn = _rnn(
            cfg.rnn,
            cfg.embedding_dim,
            cfg.encoder_hidden,
            cfg.encoder_layers,
            cfg.dropout,
            cfg.bidirectional,
        )
        self.directions = 2 if cfg.bidirectional else 1
        self.backend = DEFAULT

    def forward(self, src: Tensor, src_lengths: Tensor) -> tuple[Tensor, Tensor]:
        """src (B, S), src_lengths (B,) -> states (B, S, Dk), final (B, Dk).

        ``final`` joins the last layer's final forward and backward states.
        """
        emb = self.dropout(self.embed(src))  # (B, S, E)
        if _fast_training(self.backend, emb):
            states, final = recurrence.encode(self.rnn, emb, src_lengths, self.training)
            return self.dropout(states), final
        packed = pack_padded_sequence(
            emb, src_lengths.cpu(), batch_first=True, enforce_sorted=False
        )
        out, hidden = self.rnn(packed)
        states, _ = pad_packed_sequence(
            out, batch_first=True, total_length=src.size(1)
        )  # (B, S, Dk)
        h = hidden[0] if isinstance(hidden, tuple) else hidden  # (layers * dirs, B, He)
        final = torch.cat(
            [h[-self.directions + i] for i in range(self.directions)], dim=-1
        )  # (B, Dk)
        return self.dropout(states), final


class Decoder(nn.Module):
    """Both decoder styles; ``style`` picks the step function.

    Public API: ``init_state(final)``, ``forward(tgt_in, state, memory)`` for
    teacher forcing and ``step(prev_tokens, state, memory)`` for decoding.

    The backend (:mod:`attnkit.accel.backend`, set by :meth:`Seq2Seq.set_backend`) decides how
    the same function is computed: ``reference`` calls ``nn.GRU``/``nn.LSTM`` once per step;
    the others step through :func:`attnkit.accel.cells.fused_step` and run a Luong decoder
    without input feeding as one RNN call over the target; ``native`` trains a one-layer decoder
    on a CPU through the handwritten-backward loop of :mod:`attnkit.accel.loops` where its
    attention declares its scores (``loop_spec()``); ``compile`` compiles :meth:`_step`.
    """

    def __init__(self, cfg: Seq2SeqConfig, vocab_size: int):
        super().__init__()
        self.style = cfg.decoder_style
        self.rnn_kind = cfg.rnn
        self.layers = cfg.decoder_layers
        self.hidden = cfg.decoder_hidden
        self.input_feeding = cfg.input_feeding and self.style == "luong"
        memory_dim = cfg.memory_dim
        emb = cfg.embedding_dim
        self.embed = nn.Embedding(vocab_size, emb, padding_idx=PAD_ID)
        self.dropout = Dropout(cfg.dropout)
        self.bridge = nn.Linear(memory_dim, self.layers * self.hidden)
        self.attention = build_attention(
            cfg.attention, self.hidden, memory_dim, cfg.attention_dim, cfg.heads
        )
        if self.style == "bahdanau":
            rnn_input = emb + memory_dim
            # [s_t; c_t; y_{t-1}] -> output
            self.combine = nn.Linear(self.hidden + memory_dim + emb, self.hidden)
        else:
            rnn_input = emb + (self.hidden if self.input_feeding else 0)
            self.combine = nn.Linear(memory_dim + self.hidden, self.hidden)  # [c_t; h_t] -> h~_t
        self.rnn = _rnn(cfg.rnn, rnn_input, self.hidden, self.layers, cfg.dropout)
        self.output = nn.Linear(self.hidden, vocab_size)
        self.backend = DEFAULT

    @property
    def fused(self) -> bool:
        """Whether steps go through the fused cells (every backend but ``reference``)."""
        return self.backend.cell != "nn"

    # ---- state ---------------------------------------------------------
    def init_state(self, final: Tensor) -> DecoderState:
        """final (B, Dk) -> s_0 of every layer through the bridge."""
        b = final.size(0)
        h0 = torch.tanh(self.bridge(final)).view(b, self.layers, self.hidden)
        h0 = h0.transpose(0, 1).contiguous()  # (L, B, H)
        rnn_state = (h0, torch.zeros_like(h0)) if self.rnn_kind == "lstm" else h0
        feed = final.new_zeros(b, self.hidden) if self.input_feeding else None
        return DecoderState(rnn_state, feed)

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

    # ---- one step given the embedded previous token ----------------------
    def _step(
        self,
        emb_t: Tensor,
        state: DecoderState,
        memory: Memory,
        x_proj_t: Tensor | None = None,
        keep_t: Tensor | None = None,
        weights: list | None = None,
    ) -> tuple[Tensor, DecoderState, Tensor]:
        """emb_t (B, E) -> pre-output (B, H), new state, attention weights (B, S).

        ``keep_t`` (B, H): a dropout mask already scaled by 1/(1-p), drawn for all steps at once.
        """
        if self.style == "bahdanau":
            query = _top_layer(state.rnn)  # s_{t-1}, (B, H)
            # (B, Dk), (B, S)
            context, att = self.attention(query, memory.states, memory.projected, memory.mask)
            s_t, rnn_state = self._recur(emb_t, x_proj_t, context, state.rnn, weights)  # (B, H)
            pre = torch.tanh(self.combine(torch.cat([s_t, context, emb_t], -1)))
            return self._drop(pre, keep_t), DecoderState(rnn_state), att
        h_t, rnn_state = self._recur(emb_t, x_proj_t, state.feed, state.rnn, weights)  # (B, H)
        context, att = self.attention(h_t, memory.states, memory.projected, memory.mask)
        # h~_t, (B, H)
        attn_vec = self._drop(torch.tanh(self.combine(torch.cat([context, h_t], -1))), keep_t)
        return attn_vec, DecoderState(rnn_state, attn_vec if self.input_feeding else None), att

    def set_backend(self, backend: Backend) -> None:
        """Compute with ``backend`` from now on; ``compile`` replaces :meth:`_step` on this
        instance by its ``torch.compile`` version (dynamic shapes: one graph for any batch and
        source length), any other backend restores the eager one. The weights are unchanged."""
        self.__dict__.pop("_step", None)
        if backend.compiled:
            self._step = torch.compile(self._step, dynamic=True)
        self.backend = backend

    def loop_spec(self) -> LoopSpec | None:
        """What the handwritten-backward loop computes for this decoder, or None where the
        backend has no such loop, the decoder has more than one layer or does not feed
        attention back (Luong without input feeding), or the attention declares no scores."""
        one_layer_fed = self.layers == 1 and (self.style == "bahdanau" or self.input_feeding)
        if not (self.backend.handwritten_loop and one_layer_fed):
            return None
        score = self.attention.loop_spec()
        return None if score is None else LoopSpec.of(self.rnn_kind == "lstm", score)

    def _drop(self, x: Tensor, keep: Tensor | None) -> Tensor:
        return self.dropout(x) if keep is None else x * keep

    def dropout_masks(self, b: int, t: int, like: Tensor) -> Tensor | None:
        """(T, B, H) inverted-dropout masks for every step in one draw (None when dropout is
        off)."""
        p = self.dropout.p
        if not self.training or p == 0.0:
            return None
        return keep_mask((t, b, self.hidden), p, like)

    def step(
        self, prev_tokens: Tensor, state: DecoderState, memory: Memory
    ) -> tuple[Tensor, DecoderState, Tensor]:
        """prev_tokens (B,) -> logits (B, V), new state, weights (B, S)."""
        with self.backend.scope():
            emb_t = self.dropout(self.embed(prev_tokens))  # (B, E)
            x_proj_t = None
            if memory.input_table is not None:  # (B, G*H): a lookup, not a matmul
                x_proj_t = memory.input_table.index_select(0, prev_tokens)
            pre, state, weights = self._step(emb_t, state, memory, x_proj_t)
            return self.output(pre), state, weights

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
        if (
            self.embed.num_embeddings > rows
        ):  # building it would cost more matmul rows than it saves
            return None
        return cells.project_inputs(self.rnn, self.embed.weight)

    # ---- teacher forcing ---------------------------------------------------
    def forward(self, tgt_in: Tensor, state: DecoderState, memory: Memory) -> tuple[Tensor, Tensor]:
        """tgt_in (B, T) -> logits (B, T, V), weights (B, T, S)."""
        with self.backend.scope():
            emb = self.dropout(self.embed(tgt_in))  # (B, T, E), embedded once for all steps
            if self.style == "luong" and not self.input_feeding and self.fused:
                return self._forward_whole(tgt_in, emb, state, memory)
            spec = self.loop_spec() if _fast_training(self.backend, emb) else None
            if spec is not None:
                return loops.teacher_force(self, spec, tgt_in, emb, state, memory)
            return self._forward_steps(tgt_in, emb, state, memory)

    def _forward_whole(
        self, tgt_in: Tensor, emb: Tensor, state: DecoderState, memory: Memory
    ) -> tuple[Tensor, Tensor]:
        """No step depends on the previous attention: one RNN call over T, then attention for
        all T steps in one batched matmul. emb (B, T, E) -> logits (B, T, V), weights (B, T, S)."""
        if _fast_training(self.backend, emb):
            out = recurrence.over_target(self.rnn, tgt_in != PAD_ID, emb, state.rnn, self.training)
        else:
            out, _ = self.rnn(emb, state.rnn)  # (B, T, H)
        # (B, T, Dk), (B, T, S)
        context, weights = self.attention(out, memory.states, memory.projected, memory.mask)
        pre = self.dropout(torch.tanh(self.combine(torch.cat([context, out], -1))))  # (B, T, H)
        return self.output(pre), weights

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


class Seq2Seq(nn.Module):
    """Encoder + attention decoder.  ``forward`` is teacher-forced; decoding uses
    ``encode``/``decoder.step``."""

    family = "seq2seq"

    def __init__(self, cfg: Seq2SeqConfig, src_vocab_size: int, tgt_vocab_size: int):
        super().__init__()
        self.cfg = cfg
        self.encoder = Encoder(cfg, src_vocab_size)
        self.decoder = Decoder(cfg, tgt_vocab_size)

    @property
    def backend(self) -> Backend:
        return self.decoder.backend

    def set_backend(self, backend: Backend) -> None:
        """Compute with ``backend`` (see :func:`attnkit.accel.backend.resolve`) from now on."""
        self.encoder.backend = backend
        self.decoder.set_backend(backend)

    def encode(self, src: Tensor, src_lengths: Tensor) -> tuple[Memory, DecoderState]:
        """src (B, S) -> the attention memory and the decoder's initial state."""
        with self.backend.scope():
            states, final = self.encoder(src, src_lengths)
            mask = src != PAD_ID  # (B, S), True = may attend
            table = self.decoder.input_table(src.numel())
            keys = self.decoder.attention.project_keys(states)  # projected once per batch
            return Memory(states, keys, mask, table), self.decoder.init_state(final)

    def forward(self, src: Tensor, src_lengths: Tensor, tgt_in: Tensor) -> tuple[Tensor, Tensor]:
        """src (B, S), tgt_in (B, T) -> logits (B, T, V), attention weights (B, T, S)."""
        memory, state = self.encode(src, src_lengths)
        return self.decoder(tgt_in, state, memory)
