"""RNN encoder-decoder with attention (or without), readable top to bottom.

Encoder: embeddings -> GRU/LSTM (layers, optionally bidirectional, packed so
padding never enters the states). Its states are the attention memory.

Decoder: one of the registered styles of :mod:`attnkit.models.decoders` (``bahdanau``,
``luong``, ``fixed``), picked by ``model.decoder``, on the shared machinery of
:mod:`attnkit.models.rnn_decoder`; each starts from the encoder's final state
through a learned bridge. ``bahdanau`` and ``luong`` hold any attention from
:mod:`attnkit.attention`; ``fixed`` goes with ``model.attention: none`` and reads the encoder's
final state as the same context at every step (:attr:`Seq2Seq.has_attention` is False).

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

from attnkit.accel import recurrence
from attnkit.accel.backend import DEFAULT, Backend
from attnkit.attention.base import AttentionOptions
from attnkit.attention.dropout import Dropout
from attnkit.attention.modules import ATTENTION_TYPES, NO_ATTENTION
from attnkit.config import join_key
from attnkit.data.vocab import PAD_ID, UNK_ID
from attnkit.errors import ConfigError
from attnkit.models.copy import copying
from attnkit.models.decoders import DECODERS, pairs_with
from attnkit.models.rnn_decoder import DecoderState, RNNDecoder, make_rnn

#: the decoders' base under its former name, for code that imports it from here
Decoder = RNNDecoder


@dataclass
class Seq2SeqConfig:
    """The model section of an experiment file with ``arch: rnn`` (the default)."""

    arch: str = "rnn"  # rnn | transformer (attnkit.models.architectures)
    #: bahdanau | luong-dot | luong-general | luong-concat | luong-location | local-m | local-p |
    #: cosine | scaled-dot | multihead | uniform | none
    attention: str = "bahdanau"
    #: a DECODERS name | auto (bahdanau for bahdanau attention, fixed for none, else luong)
    decoder: str = "auto"
    rnn: str = "gru"  # gru | lstm
    embedding_dim: int = 64
    encoder_hidden: int = 128  # per direction
    encoder_layers: int = 1
    bidirectional: bool = True
    decoder_hidden: int = 256
    decoder_layers: int = 1
    attention_dim: int = 128  # width of additive/projected attention spaces (not for none)
    heads: int = 4  # multihead only
    input_feeding: bool = True  # luong decoder only
    dropout: float = 0.1
    window: int = 10  # local-m, local-p only: the half width D of the window [p_t - D, p_t + D]
    beta: float = 5.0  # cosine only: the key strength (sharpening) at initialisation
    positions: int = 128  # luong-location only: the source positions W_a scores (at most)
    #: the pointer-generator's copy switch (attnkit.models.copy): write a vocabulary word or copy
    #: a source word, even one never seen in training; needs an attention and one vocabulary
    copy: bool = False

    CHOICES = {
        "arch": ("rnn",),
        "attention": (*ATTENTION_TYPES, NO_ATTENTION),
        "decoder": ("auto", *DECODERS),
        "rnn": ("gru", "lstm"),
    }
    #: keys that only some attentions / decoders read (see attnkit.config.check_applicable)
    APPLIES = {
        "attention_dim": ("attention", tuple(a for a in ATTENTION_TYPES if a != "uniform")),
        "heads": ("attention", ("multihead",)),
        "window": ("attention", ("local-m", "local-p")),
        "beta": ("attention", ("cosine",)),
        "positions": ("attention", ("luong-location",)),
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
            "window",
            "positions",
        ):
            if getattr(self, name) < 1:
                raise ConfigError(
                    f"{join_key(where, name)}: must be at least 1, got {getattr(self, name)}"
                )
        if not self.beta > 0:
            raise ConfigError(f"{join_key(where, 'beta')}: must be above 0, got {self.beta}")
        if not 0.0 <= self.dropout < 1.0:
            raise ConfigError(
                f"{join_key(where, 'dropout')}: must be in [0, 1), got {self.dropout}"
            )
        self.check_decoder(where)
        if self.copy and self.attention == NO_ATTENTION:
            raise ConfigError(
                f"{join_key(where, 'copy')}: copying reads the attention; attention none has none"
            )

    def check_decoder(self, where: str) -> None:
        """ConfigError unless the decoder style holds the attention (``none``: only ``fixed``)."""
        style = self.decoder_style
        if style in DECODERS and not pairs_with(style, self.attention):
            wanted = "attention none" if self.attention != NO_ATTENTION else "an attention"
            raise ConfigError(
                f"{join_key(where, 'decoder')}: {style} does not go with attention "
                f"{self.attention}; the decoder {style} needs {wanted} "
                f"(decoder auto picks the one that fits)"
            )

    @property
    def decoder_style(self) -> str:
        if self.decoder != "auto":
            return self.decoder
        if self.attention == NO_ATTENTION:
            return "fixed"
        return "bahdanau" if self.attention == "bahdanau" else "luong"

    @property
    def layers_and_heads(self) -> tuple[None, None]:
        """No layers of attention heads: decoding returns one map per step."""
        return None, None

    @property
    def attention_options(self) -> AttentionOptions:
        """The settings only some attentions read."""
        return AttentionOptions(self.window, self.beta, self.positions)

    @property
    def memory_dim(self) -> int:
        return self.encoder_hidden * (2 if self.bidirectional else 1)


@dataclass
class Memory:
    """What the decoder attends to, computed once per source batch.

    states (B, S, Dk); projected: the attention's precomputed keys (None without attention);
    mask (B, S) bool; input_table (V, G*H) or None: every target token's layer-0 input gates,
    for decoding (:meth:`RNNDecoder.input_table`). It lives exactly as long as one decoding
    call's memory, so no weight update can ever meet a stale table. final (B, Dk): the encoder's
    final state, the fixed context of the decoder without attention (None for the others).
    copy_ids (B, S): the source's extended ids, which a copying decoder copies (None for the
    others); extended: the extended vocabulary's size Vx, the same for every row of the batch.
    """

    states: Tensor
    projected: Any
    mask: Tensor
    input_table: Tensor | None = None
    final: Tensor | None = None
    copy_ids: Tensor | None = None
    extended: int = 0

    def index_select(self, index: Tensor) -> Memory:
        """Rows in ``index`` order (beam search expands B to B*K); the token table has no rows."""
        return Memory(
            self.states.index_select(0, index),
            _index_select(self.projected, index),
            self.mask.index_select(0, index),
            self.input_table,
            _index_select(self.final, index),
            _index_select(self.copy_ids, index),
            self.extended,
        )


def _index_select(x: Any, index: Tensor) -> Any:
    """Rows of a tensor, or of every tensor in a tuple/list (multi-head keys and values)."""
    if x is None:
        return None
    if isinstance(x, (tuple, list)):
        return type(x)(_index_select(v, index) for v in x)
    return x.index_select(0, index)


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
        self.rnn = make_rnn(
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
        if self.backend.trains_by_hand(emb):
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


class Seq2Seq(nn.Module):
    """Encoder + the decoder ``cfg.decoder_style`` names.  ``forward`` is teacher-forced;
    decoding uses ``encode``/``decoder.step``."""

    def __init__(self, cfg: Seq2SeqConfig, src_vocab_size: int, tgt_vocab_size: int):
        super().__init__()
        self.cfg = cfg
        self.encoder = Encoder(cfg, src_vocab_size)
        if cfg.decoder_style not in DECODERS:
            raise ConfigError(
                f"model.decoder: {cfg.decoder!r} is not one of "
                f"{', '.join(Seq2SeqConfig.CHOICES['decoder'])}"
            )
        cfg.check_decoder("model")
        if cfg.copy and src_vocab_size != tgt_vocab_size:
            raise ConfigError(
                f"model.copy: a copying model reads and writes one vocabulary, got "
                f"{src_vocab_size} source and {tgt_vocab_size} target tokens"
            )
        style = DECODERS[cfg.decoder_style]
        self.decoder = (copying(style) if cfg.copy else style)(cfg, tgt_vocab_size)
        self.src_vocab_size = src_vocab_size

    @property
    def has_attention(self) -> bool:
        """False for ``attention: none``: the weights it returns are zeros, never to be drawn
        or scored as attention (pictures show its gradient saliency instead)."""
        return self.decoder.attends

    @property
    def backend(self) -> Backend:
        return self.decoder.backend

    def set_backend(self, backend: Backend) -> None:
        """Compute with ``backend`` (see :func:`attnkit.accel.backend.resolve`) from now on."""
        self.encoder.backend = backend
        self.decoder.set_backend(backend)

    def describe_backend(self, backend: Backend) -> str:
        """One line for the training log."""
        return backend.describe(self.cfg.rnn)

    def encode(self, src: Tensor, src_lengths: Tensor) -> tuple[Memory, DecoderState]:
        """src (B, S) -> the attention memory and the decoder's initial state."""
        copy_ids, extended = None, 0
        if self.cfg.copy:  # extended ids (words only the source holds) are read as <unk>
            copy_ids, extended = src, max(self.src_vocab_size, int(src.max()) + 1)
            src = src.masked_fill(src >= self.src_vocab_size, UNK_ID)
        with self.backend.scope():
            states, final = self.encoder(src, src_lengths)
            mask = src != PAD_ID  # (B, S), True = may attend
            table = self.decoder.input_table(src.numel())
            keys = self.decoder.project_keys(states)  # projected once per batch
            # only the decoder without attention reads it: no per-step index_select otherwise
            fixed_context = None if self.decoder.attends else final
            memory = Memory(states, keys, mask, table, fixed_context, copy_ids, extended)
            return memory, self.decoder.init_state(final)

    def forward(self, src: Tensor, src_lengths: Tensor, tgt_in: Tensor) -> tuple[Tensor, Tensor]:
        """src (B, S), tgt_in (B, T) -> logits (B, T, V), attention weights (B, T, S) (zeros
        without attention). A copying model (``copy``) takes extended ids on both sides
        (:mod:`attnkit.data.copy_ids`) and gives log-probabilities (B, T, Vx) instead of
        logits."""
        memory, state = self.encode(src, src_lengths)
        return self.decoder(tgt_in, state, memory)
