"""The Transformer encoder-decoder (Vaswani et al. 2017), readable top to bottom.

Attention without recurrence: the decoder state becomes the *query*, the encoder states become
*keys* and *values*, the dot product is scaled by 1/sqrt(Dh) and split over H heads
(:class:`attnkit.attention.qkv.MultiHeadAttention`, the class the RNN decoders' ``multihead``
attention is); order comes from positions added to the embeddings (``model.positional``:
sinusoidal, the default, a learned table, or none: :mod:`attnkit.models.positions`). Layers
are pre-norm (LayerNorm before each sub-layer, a residual around it, one more LayerNorm at the
top of each stack), which trains without a long warm-up search.

* Encoder layer:  x += Dropout(SelfAttention(LN(x)));  x += Dropout(FeedForward(LN(x)))
* Decoder layer:  y += Dropout(CausalSelfAttention(LN(y)));
  y += Dropout(CrossAttention(LN(y), encoder output));  y += Dropout(FeedForward(LN(y)))

It offers what the RNN model offers the rest of attnkit -- ``encode(src, src_lengths)`` ->
(memory, state), ``decoder.step(prev_tokens, state, memory)``, a teacher-forced ``forward`` --
so greedy decoding, beam search, forced decoding, ensembles and the translator run it unchanged.
Decoding is incremental: the state caches every decoder layer's self-attention keys and values,
and the memory holds every layer's cross-attention keys and values, projected once per source
batch. A step returns the cross-attention of every layer and head (B, L, H, S).

The backend (``train.backend``/``decode.backend``) is the one switch for speed: ``reference``
computes every attention explicitly; any other (``fused``, ``native`` and ``compile`` alike: the
RNN's kernels and compiled steps do not apply here) lets an attention whose weights nobody reads
and whose dropout is off (the encoder and the teacher-forced forward in eval mode, dropout-free
training) run ``F.scaled_dot_product_attention``. Training with attention dropout computes it
explicitly: torch's fused kernel would fall back to a slower unfused path. Dropout masks come from
``F.dropout`` except inside the scope of a backend allowing kernels (``native``, ``auto`` on a
CPU), where attnkit's cheaper CPU masks (:mod:`attnkit.accel.dropout`) draw them. All compute the
same function.

``model.attention_impl`` chooses how every attention is computed instead
(:mod:`attnkit.attention.implementations`): ``auto`` (the default, and what every checkpoint
written before the key existed means) is the backend's choice above; ``explicit``, ``sdpa`` and
``chunked`` compute the same function their own way (the backend no longer chooses); ``local``,
``linear`` and ``performer`` compute another one, memory linear in the length. ``local`` needs
the queries and keys of one sequence: it serves the self-attentions, and cross-attention stays
``auto``. Attention dropout applies where the implementation holds weights (``explicit``,
``sdpa``); the others have none to drop. Weights asked for (pictures, decoding's
cross-attention, rollout) are each implementation's implied weights. The implementations hold no
parameters of their own, so a checkpoint loads under any of them.

Shapes: B batch, S source length, T target length, D model width, H heads, Dh = D / H,
L decoder layers, V vocab, F feed-forward width.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from attnkit.accel.backend import DEFAULT, Backend
from attnkit.attention.dropout import Dropout
from attnkit.attention.implementations import build_implementation
from attnkit.attention.qkv import MultiHeadAttention
from attnkit.data.vocab import PAD_ID
from attnkit.models.positions import POSITIONAL, sinusoids  # noqa: F401 (sinusoids: lessons)
from attnkit.models.transformer_config import ATTENTION_NAME, TransformerConfig  # noqa: F401


@dataclass
class TransformerMemory:
    """What the decoder attends to, computed once per source batch.

    states (B, S, D) the encoder's output; cross: per decoder layer its projected keys and
    values, each (B, H, S, Dh); mask (B, S) bool, True = a real source token.
    """

    states: Tensor
    cross: list[tuple[Tensor, Tensor]]
    mask: Tensor

    def index_select(self, index: Tensor) -> TransformerMemory:
        """Rows in ``index`` order (beam search expands B to B*K; greedy drops finished rows)."""
        return TransformerMemory(
            self.states.index_select(0, index),
            [(k.index_select(0, index), v.index_select(0, index)) for k, v in self.cross],
            self.mask.index_select(0, index),
        )


@dataclass
class TransformerState:
    """The decoder's self-attention cache: per layer the keys and values of every token fed so
    far, each (B, H, t, Dh). Its length t is the position of the next token."""

    cache: list[tuple[Tensor, Tensor]]

    @property
    def length(self) -> int:
        return self.cache[0][0].size(2)

    def index_select(self, index: Tensor) -> TransformerState:
        return TransformerState(
            [(k.index_select(0, index), v.index_select(0, index)) for k, v in self.cache]
        )


class Embeddings(nn.Module):
    """Token embeddings scaled by sqrt(D), plus the positions of ``model.positional``
    (:mod:`attnkit.models.positions`), then dropout."""

    def __init__(self, vocab_size: int, cfg: TransformerConfig):
        super().__init__()
        width = cfg.embedding_dim
        self.embed = nn.Embedding(vocab_size, width, padding_idx=PAD_ID)
        self.scale = math.sqrt(width)
        self.dropout = Dropout(cfg.dropout)
        self.positions = POSITIONAL[cfg.positional](width, cfg.max_positions)

    def forward(self, tokens: Tensor, start: int = 0) -> Tensor:
        """tokens (B, N) at positions start .. start + N - 1 -> (B, N, D)."""
        x = self.embed(tokens) * self.scale
        positions = self.positions(start, tokens.size(1))  # (N, D), or None
        if positions is not None:
            x = x + positions
        return self.dropout(x)


class FeedForward(nn.Sequential):
    """Linear(D, F) -> ReLU -> Dropout -> Linear(F, D), applied at every position alike."""

    def __init__(self, width: int, inner: int, dropout: float):
        super().__init__(
            nn.Linear(width, inner), nn.ReLU(), Dropout(dropout), nn.Linear(inner, width)
        )


def _attention(cfg: TransformerConfig, seed: int, cross: bool = False) -> MultiHeadAttention:
    """One multi-head attention of width D in the packed layout (one (3D, D) input projection),
    computed by ``model.attention_impl`` (``seed``: a performer's random features)."""
    d = cfg.embedding_dim
    impl = None
    if cfg.attention_impl != "auto":
        impl = build_implementation(cfg.attention_impl, d // cfg.heads, cfg.impl_options(seed))
        impl = None if cross and impl.self_only else impl
    return MultiHeadAttention(d, d, d, cfg.heads, packed=True, dropout=cfg.dropout, impl=impl)


class EncoderLayer(nn.Module):
    def __init__(self, cfg: TransformerConfig, index: int = 0):
        super().__init__()
        d = cfg.embedding_dim
        self.norm_self = nn.LayerNorm(d)
        self.self_attn = _attention(cfg, index)
        self.norm_ff = nn.LayerNorm(d)
        self.ff = FeedForward(d, cfg.ff_dim, cfg.dropout)
        self.dropout = Dropout(cfg.dropout)

    def forward(self, x: Tensor, mask: Tensor, fast: bool, weights: list | None = None) -> Tensor:
        """x (B, S, D), mask (B, S) -> (B, S, D); the self-attention weights (B, H, S, S) are
        appended to ``weights`` when it is given."""
        queries, keys, values = self.self_attn.project_all(self.norm_self(x))
        wanted = weights is not None
        context, w = self.self_attn.attend_parts(queries, keys, values, mask, False, wanted, fast)
        if wanted:
            weights.append(w)
        x = x + self.dropout(context)
        return x + self.dropout(self.ff(self.norm_ff(x)))


class DecoderLayer(nn.Module):
    def __init__(self, cfg: TransformerConfig, index: int = 0):
        super().__init__()
        d = cfg.embedding_dim
        self.norm_self = nn.LayerNorm(d)
        self.self_attn = _attention(cfg, 1000 + 2 * index)
        self.norm_cross = nn.LayerNorm(d)
        self.cross_attn = _attention(cfg, 1001 + 2 * index, cross=True)
        self.norm_ff = nn.LayerNorm(d)
        self.ff = FeedForward(d, cfg.ff_dim, cfg.dropout)
        self.dropout = Dropout(cfg.dropout)

    def forward(
        self,
        y: Tensor,
        cache: tuple[Tensor, Tensor] | None,
        cross: tuple[Tensor, Tensor],
        src_mask: Tensor,
        need_weights: bool,
        fast: bool,
    ) -> tuple[Tensor, tuple[Tensor, Tensor], Tensor | None]:
        """y (B, N, D): the whole target (teacher forcing, ``cache`` None, each token attending
        to itself and those before it) or the next token (decoding, N = 1, ``cache`` the earlier
        tokens' keys and values); ``cross`` the encoder's keys and values for this layer,
        ``src_mask`` (B, S) the source positions it may attend to. Returns y (B, N, D), the keys
        and values of every token so far (B, H, t + N, Dh), and the cross-attention weights
        (B, H, N, S) when ``need_weights``."""
        queries, keys, values = self.self_attn.project_all(self.norm_self(y))  # (B, H, N, Dh)
        if cache is not None:
            keys, values = torch.cat([cache[0], keys], 2), torch.cat([cache[1], values], 2)
        context, _ = self.self_attn.attend_parts(queries, keys, values, None, True, False, fast)
        y = y + self.dropout(context)
        context, weights = self.cross_attn.forward_heads(
            self.norm_cross(y), cross, src_mask, need_weights, fast
        )
        y = y + self.dropout(context)
        y = y + self.dropout(self.ff(self.norm_ff(y)))
        return y, (keys, values), weights


class TransformerEncoder(nn.Module):
    def __init__(self, cfg: TransformerConfig, vocab_size: int):
        super().__init__()
        self.embeddings = Embeddings(vocab_size, cfg)
        self.layers = nn.ModuleList(EncoderLayer(cfg, i) for i in range(cfg.encoder_layers))
        self.norm = nn.LayerNorm(cfg.embedding_dim)

    @property
    def embed(self) -> nn.Embedding:
        """The token embeddings (what saliency attributes to, as for the RNN encoder)."""
        return self.embeddings.embed

    def forward(self, src: Tensor, mask: Tensor, fast: bool, weights: list | None = None) -> Tensor:
        """src (B, S), mask (B, S) -> states (B, S, D); every layer's self-attention weights
        (B, H, S, S) are appended to ``weights`` when it is given."""
        x = self.embeddings(src)
        for layer in self.layers:
            x = layer(x, mask, fast, weights)
        return self.norm(x)


class TransformerDecoder(nn.Module):
    """The decoder stack with its output layer; ``forward`` teacher-forces, ``step`` decodes."""

    #: it holds attention (pictures and alignment scores read its weights)
    attends = True

    def __init__(self, cfg: TransformerConfig, vocab_size: int):
        super().__init__()
        self.embeddings = Embeddings(vocab_size, cfg)
        self.layers = nn.ModuleList(DecoderLayer(cfg, i) for i in range(cfg.decoder_layers))
        self.norm = nn.LayerNorm(cfg.embedding_dim)
        # tied: the output layer is the embedding matrix itself (no second parameter sharing its
        # memory, which a safetensors checkpoint could not hold), plus a bias of its own
        self.output = None if cfg.tie_output else nn.Linear(cfg.embedding_dim, vocab_size)
        self.output_bias = nn.Parameter(torch.zeros(vocab_size)) if cfg.tie_output else None
        self.fast = True
        self.backend = DEFAULT  # the model's: decoding calls step() itself

    def logits(self, y: Tensor) -> Tensor:
        """(B, N, D) top-layer states -> (B, N, V) scores of the next token."""
        y = self.norm(y)
        if self.output is None:
            return F.linear(y, self.embeddings.embed.weight, self.output_bias)
        return self.output(y)

    def project_memory(self, states: Tensor) -> list[tuple[Tensor, Tensor]]:
        """states (B, S, D) -> every layer's cross-attention keys and values (B, H, S, Dh)."""
        return [layer.cross_attn.project_keys(states) for layer in self.layers]

    def empty_state(self, memory: TransformerMemory) -> TransformerState:
        """The cache before the first token: every layer's keys and values of length 0."""
        k, _ = memory.cross[0]
        empty = k.new_zeros(k.size(0), k.size(1), 0, k.size(3))  # (B, H, 0, Dh)
        return TransformerState([(empty, empty) for _ in self.layers])

    def forward(
        self, tgt_in: Tensor, memory: TransformerMemory, need_weights: bool = False
    ) -> tuple[Tensor, Tensor | None]:
        """tgt_in (B, T) -> logits (B, T, V) and, when ``need_weights``, the cross-attention of
        every layer and head (B, L, H, T, S)."""
        with self.backend.scope():
            y = self.embeddings(tgt_in)
            weights = []
            for layer, cross in zip(self.layers, memory.cross):
                y, _, w = layer(y, None, cross, memory.mask, need_weights, self.fast)
                weights.append(w)
            return self.logits(y), torch.stack(weights, 1) if need_weights else None

    def step(
        self, prev_tokens: Tensor, state: TransformerState, memory: TransformerMemory
    ) -> tuple[Tensor, TransformerState, Tensor]:
        """prev_tokens (B,) -> logits (B, V), the state with this token cached, and the
        cross-attention of every layer and head (B, L, H, S)."""
        with self.backend.scope():
            y = self.embeddings(prev_tokens.unsqueeze(1), start=state.length)  # (B, 1, D)
            cache, weights = [], []
            for layer, past, cross in zip(self.layers, state.cache, memory.cross):
                y, kv, w = layer(y, past, cross, memory.mask, True, self.fast)
                cache.append(kv)
                weights.append(w.squeeze(2))  # (B, H, S)
            logits = self.logits(y).squeeze(1)
            return logits, TransformerState(cache), torch.stack(weights, 1)


class Transformer(nn.Module):
    """Encoder + decoder stacks; see the module docstring."""

    has_attention = True

    def __init__(self, cfg: TransformerConfig, src_vocab_size: int, tgt_vocab_size: int):
        super().__init__()
        self.cfg = cfg
        self.encoder = TransformerEncoder(cfg, src_vocab_size)
        self.decoder = TransformerDecoder(cfg, tgt_vocab_size)
        self._init_weights()
        self.backend = DEFAULT

    def _init_weights(self) -> None:
        """Xavier-uniform matrices (embeddings included; the padding row zero), zero biases; a
        learned position table as :mod:`attnkit.models.positions` initialises it."""
        for name, p in self.named_parameters():
            if p.dim() > 1:
                nn.init.xavier_uniform_(p)
            elif name.endswith("bias"):
                nn.init.zeros_(p)
        self.encoder.embeddings.positions.reset_parameters()
        self.decoder.embeddings.positions.reset_parameters()
        with torch.no_grad():
            self.encoder.embed.weight[PAD_ID].zero_()
            self.decoder.embeddings.embed.weight[PAD_ID].zero_()

    @property
    def position_limit(self) -> int | None:
        """The most target positions the decoder has (decoding stops there), None for any."""
        return self.decoder.embeddings.positions.limit

    def set_backend(self, backend: Backend) -> None:
        """``reference``: every attention explicit; any other: the fused kernel where no weights
        are read."""
        self.backend = backend
        self.decoder.backend = backend
        self.decoder.fast = backend.name != "reference"

    def describe_backend(self, backend: Backend) -> str:
        """One line for the training log."""
        how = (
            "explicit attention everywhere"
            if backend.name == "reference"
            else "F.scaled_dot_product_attention where no weights are read and no attention "
            "dropout applies, explicit attention elsewhere"
        )
        if self.cfg.attention_impl != "auto":
            how = f"attention_impl {self.cfg.attention_impl} (the backend does not choose)"
        return f"backend: {backend.name} (Transformer: {how})"

    def encode(
        self, src: Tensor, src_lengths: Tensor
    ) -> tuple[TransformerMemory, TransformerState]:
        """src (B, S) -> the memory (encoder output, every layer's cross keys/values, mask) and
        the empty decoder cache. ``src_lengths`` is implied by the padding (kept for the common
        interface)."""
        mask = src != PAD_ID  # (B, S), True = may attend
        with self.backend.scope():
            states = self.encoder(src, mask, self.decoder.fast)
            memory = TransformerMemory(states, self.decoder.project_memory(states), mask)
            return memory, self.decoder.empty_state(memory)

    def encoder_attention(self, src: Tensor) -> Tensor:
        """src (B, S) -> every encoder layer's self-attention (B, L, H, S, S), rows = queries
        (what attention rollout and flow read, :mod:`attnkit.explain.rollout`)."""
        weights: list[Tensor] = []
        with self.backend.scope():
            self.encoder(src, src != PAD_ID, False, weights)
        return torch.stack(weights, 1)

    def forward(
        self, src: Tensor, src_lengths: Tensor, tgt_in: Tensor, need_weights: bool = False
    ) -> tuple[Tensor, Tensor | None]:
        """src (B, S), tgt_in (B, T) -> logits (B, T, V) and, when ``need_weights``, the
        cross-attention (B, L, H, T, S) (None otherwise: training reads none)."""
        memory, _ = self.encode(src, src_lengths)
        return self.decoder(tgt_in, memory, need_weights)
