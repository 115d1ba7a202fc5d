"""A sentence classifier that pools its words by attention: :class:`TextClassifier`.

embedding -> encoder -> pooling -> linear layer::

    tokens (B, S) --embed--> (B, S, E) --encoder--> H (B, S, D) --pool--> (B, D') --> logits (B, C)

Encoders (:data:`ENCODERS`): ``bilstm`` and ``bigru`` (bidirectional, packed: padding never
reaches a state), ``cnn`` (1-D convolutions of the widths ``kernel_sizes``, "same" padding,
ReLU, their outputs side by side) and ``bag`` (each embedding through a linear layer and tanh:
Jain & Wallace's "average" encoder).

Pooling (:data:`POOLINGS`):

* ``additive`` -- Bahdanau's tanh scores with a learnt query: ``a = softmax(v^T tanh(W h_s +
  b))`` (the attention of Jain & Wallace 2019);
* ``scaled_dot`` -- a learnt query ``q``: ``a = softmax(q . W h_s / sqrt(A))``;
* ``structured`` -- Lin et al. 2017's structured self-attention: ``A = softmax(W_2 tanh(W_1
  H^T))``, ``R`` rows (heads), the pooled vector the R contexts side by side; its penalty
  ``||A A^T - I||_F^2`` is :func:`structured_penalty`;
* ``none`` -- no attention: the mean (``pool: mean``) or the maximum (``pool: max``) over the
  words; ``weights`` is None.

Every weight on padding is exactly 0 (the masked softmax of :mod:`attnkit.attention.scores`).
``forward(..., attention_override=W)`` pools with ``W`` instead of the computed weights (the
faithfulness tests: permuted, adversarial and uniform attention). :meth:`TextClassifier.embed`
and :meth:`TextClassifier.forward_embedded` split the forward pass at the embeddings, so
captum's gradient methods can attribute to them. No pretrained embeddings are used (none are
available offline): every weight starts random.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field

import torch
from torch import Tensor, nn
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

from attnkit.attention.scores import additive_scores, masked_softmax, scaled_dot_scores
from attnkit.config import at_least, between, check_values, not_below
from attnkit.errors import ConfigError


@dataclass
class TextModelConfig:
    """``model:`` of a text experiment: the encoder, the pooling and their sizes."""

    #: what reads the words: bilstm or bigru (bidirectional RNNs), cnn (convolutions over
    #: neighbouring words) or bag (each word alone: a linear layer and tanh)
    encoder: str = "bilstm"
    #: how the words are pooled into one vector: additive (v^T tanh(W h + b)), scaled_dot (a
    #: learnt query), structured (Lin et al. 2017: `heads` rows) or none (mean or max: `pool`)
    attention: str = "additive"
    pool: str = "mean"  # attention: none: mean | max over the words
    embedding_dim: int = 300  # width of the (randomly initialised) word embeddings
    hidden: int = 150  # per direction (bilstm, bigru), per kernel width (cnn), bag's width
    layers: int = 1  # recurrent layers (bilstm, bigru)
    kernel_sizes: list[int] = field(default_factory=lambda: [3, 5])  # cnn: convolution widths
    attention_dim: int = 100  # width of the attention's hidden layer (A)
    heads: int = 4  # structured: rows of attention (R)
    penalty: float = 1.0  # structured: weight of ||AA^T - I||_F^2 in the loss
    dropout: float = 0.5  # on the embeddings and on the pooled vector
    min_freq: int = 1  # words seen fewer times in training become <unk>
    max_vocab: int | None = None  # most words kept (the most frequent)

    CHOICES = {
        "encoder": ("bilstm", "bigru", "cnn", "bag"),
        "attention": ("additive", "scaled_dot", "structured", "none"),
        "pool": ("mean", "max"),
    }

    RULES = {
        "embedding_dim": at_least(1),
        "hidden": at_least(1),
        "layers": at_least(1),
        "attention_dim": at_least(1),
        "heads": at_least(1),
        "penalty": not_below(0),
        "dropout": between(0, 1),
        "min_freq": at_least(1),
        "max_vocab": at_least(5, null=True),
    }

    def validate(self, where: str) -> None:
        check_values(self, where, self.RULES)
        if not self.kernel_sizes or any(k < 1 for k in self.kernel_sizes):
            raise ConfigError(f"{where}.kernel_sizes: give widths of at least 1")


# ---- encoders: (config, input width) -> module with .width; module(x (B,S,E), mask) -> (B,S,D)
class _Recurrent(nn.Module):
    def __init__(self, cell: type, cfg: TextModelConfig, width: int):
        super().__init__()
        self.rnn = cell(width, cfg.hidden, cfg.layers, batch_first=True, bidirectional=True)
        self.width = 2 * cfg.hidden

    def forward(self, x: Tensor, mask: Tensor) -> Tensor:
        lengths = mask.sum(1).clamp(min=1).cpu()
        packed = pack_padded_sequence(x, lengths, batch_first=True, enforce_sorted=False)
        out, _ = self.rnn(packed)
        out, _ = pad_packed_sequence(out, batch_first=True, total_length=x.size(1))
        return out * mask.unsqueeze(-1)  # (B, S, 2H); zero on padding


class _Convolutions(nn.Module):
    def __init__(self, cfg: TextModelConfig, width: int):
        super().__init__()
        self.convs = nn.ModuleList(
            nn.Conv1d(width, cfg.hidden, k, padding="same") for k in cfg.kernel_sizes
        )
        self.width = cfg.hidden * len(cfg.kernel_sizes)

    def forward(self, x: Tensor, mask: Tensor) -> Tensor:
        x = (x * mask.unsqueeze(-1)).transpose(1, 2)  # (B, E, S): padding reads as zeros
        out = torch.cat([torch.relu(conv(x)) for conv in self.convs], dim=1).transpose(1, 2)
        return out * mask.unsqueeze(-1)  # (B, S, K*H)


class _Bag(nn.Module):
    def __init__(self, cfg: TextModelConfig, width: int):
        super().__init__()
        self.proj = nn.Linear(width, cfg.hidden)
        self.width = cfg.hidden

    def forward(self, x: Tensor, mask: Tensor) -> Tensor:
        return torch.tanh(self.proj(x)) * mask.unsqueeze(-1)  # (B, S, H)


#: ``model.encoder`` -> (config, input width) -> encoder module
ENCODERS: dict[str, Callable[[TextModelConfig, int], nn.Module]] = {
    "bilstm": lambda cfg, width: _Recurrent(nn.LSTM, cfg, width),
    "bigru": lambda cfg, width: _Recurrent(nn.GRU, cfg, width),
    "cnn": _Convolutions,
    "bag": _Bag,
}


# ---- poolings: module(h (B,S,D), mask (B,S)) -> scores (B, R, S) or None; .width, .heads
class _Additive(nn.Module):
    """``v^T tanh(W h_s + b)``: Bahdanau's score, whose query is the learnt bias ``b``."""

    heads = 1

    def __init__(self, cfg: TextModelConfig, width: int):
        super().__init__()
        self.keys = nn.Linear(width, cfg.attention_dim, bias=False)
        self.query = nn.Parameter(torch.zeros(cfg.attention_dim))
        self.v = nn.Parameter(torch.empty(cfg.attention_dim).uniform_(-0.1, 0.1))
        self.width = width

    def scores(self, h: Tensor, mask: Tensor) -> Tensor:
        query = self.query.expand(h.size(0), 1, -1)  # (B, 1, A)
        return additive_scores(query, self.keys(h), self.v)  # (B, 1, S)


class _ScaledDot(nn.Module):
    """``q . W h_s / sqrt(A)`` with a learnt query ``q``."""

    heads = 1

    def __init__(self, cfg: TextModelConfig, width: int):
        super().__init__()
        self.keys = nn.Linear(width, cfg.attention_dim, bias=False)
        self.query = nn.Parameter(torch.randn(cfg.attention_dim) / math.sqrt(cfg.attention_dim))
        self.width = width

    def scores(self, h: Tensor, mask: Tensor) -> Tensor:
        query = self.query.expand(h.size(0), 1, -1)  # (B, 1, A)
        return scaled_dot_scores(query, self.keys(h))  # (B, 1, S)


class _Structured(nn.Module):
    """Lin et al. 2017: ``A = softmax(W_2 tanh(W_1 H^T))`` with R rows; R contexts concatenated."""

    def __init__(self, cfg: TextModelConfig, width: int):
        super().__init__()
        self.w1 = nn.Linear(width, cfg.attention_dim, bias=False)
        self.w2 = nn.Linear(cfg.attention_dim, cfg.heads, bias=False)
        self.heads = cfg.heads
        self.width = width * cfg.heads

    def scores(self, h: Tensor, mask: Tensor) -> Tensor:
        return self.w2(torch.tanh(self.w1(h))).transpose(1, 2)  # (B, R, S)


#: ``model.attention`` -> (config, encoder width) -> pooling module (``none``: not here)
POOLINGS: dict[str, Callable[[TextModelConfig, int], nn.Module]] = {
    "additive": _Additive,
    "scaled_dot": _ScaledDot,
    "structured": _Structured,
}


def _mean(h: Tensor, mask: Tensor) -> Tensor:
    return h.sum(1) / mask.sum(1, keepdim=True).clamp(min=1)  # (B, D); padding is zero


def _max(h: Tensor, mask: Tensor) -> Tensor:
    filled = h.masked_fill(~mask.unsqueeze(-1), torch.finfo(h.dtype).min)
    return torch.where(mask.any(1, keepdim=True), filled.max(1).values, 0.0)  # (B, D)


#: ``model.pool`` of ``attention: none`` -> (h (B, S, D), mask) -> (B, D)
PLAIN_POOLS: dict[str, Callable[[Tensor, Tensor], Tensor]] = {"mean": _mean, "max": _max}


def structured_penalty(weights: Tensor) -> Tensor:
    """Lin et al.'s ``||A A^T - I||_F^2`` per sentence, averaged over the batch; ``weights``
    ``(B, R, S)``. Zero when the R rows are one-hot on distinct words."""
    eye = torch.eye(weights.size(1), device=weights.device, dtype=weights.dtype)
    gram = weights @ weights.transpose(1, 2)  # (B, R, R)
    return ((gram - eye) ** 2).sum((1, 2)).mean()


class TextClassifier(nn.Module):
    """Embedding, encoder, attention pooling, linear classifier (see the module docstring).

    ``forward(tokens (B, S) long, mask (B, S) bool [True = a real token], attention_override
    =None) -> (logits (B, C), weights)``: ``weights`` (B, S) for one-head pooling, (B, R, S)
    for structured self-attention, None for ``attention: none``; zero on padding.
    """

    def __init__(self, cfg: TextModelConfig, vocab_size: int, classes: int):
        super().__init__()
        self.cfg, self.classes = cfg, classes
        self.embedding = nn.Embedding(vocab_size, cfg.embedding_dim, padding_idx=0)
        nn.init.normal_(self.embedding.weight, std=0.1)
        with torch.no_grad():
            self.embedding.weight[0].zero_()
        self.dropout = nn.Dropout(cfg.dropout)
        self.encoder = ENCODERS[cfg.encoder](cfg, cfg.embedding_dim)
        width = self.encoder.width
        self.pooling = POOLINGS[cfg.attention](cfg, width) if cfg.attention != "none" else None
        self.output = nn.Linear(self.pooling.width if self.pooling else width, classes)

    @property
    def heads(self) -> int:
        """Rows of attention per sentence (R): 1, the structured attention's heads, or 0."""
        return 0 if self.pooling is None else self.pooling.heads

    def embed(self, tokens: Tensor) -> Tensor:
        """(B, S) ids -> (B, S, E) embeddings (what captum attributes to)."""
        return self.embedding(tokens)

    def forward(
        self, tokens: Tensor, mask: Tensor, attention_override: Tensor | None = None
    ) -> tuple[Tensor, Tensor | None]:
        return self.forward_embedded(self.embed(tokens), mask, attention_override)

    def forward_embedded(
        self, embedded: Tensor, mask: Tensor, attention_override: Tensor | None = None
    ) -> tuple[Tensor, Tensor | None]:
        """The forward pass from the embeddings (B, S, E) on: (logits (B, C), weights)."""
        mask = mask.to(torch.bool)
        h = self.encoder(self.dropout(embedded), mask)  # (B, S, D)
        if self.pooling is None:
            if attention_override is not None:
                raise ValueError("attention_override: this model has no attention (none)")
            return self.output(self.dropout(PLAIN_POOLS[self.cfg.pool](h, mask))), None
        if attention_override is not None:
            weights = self._checked(attention_override, mask)
        else:
            weights = masked_softmax(self.pooling.scores(h, mask), mask.unsqueeze(1))
            weights = weights.squeeze(1) if self.pooling.heads == 1 else weights
        rows = weights.unsqueeze(1) if weights.dim() == 2 else weights  # (B, R, S)
        pooled = (rows @ h).flatten(1)  # (B, R*D)
        return self.output(self.dropout(pooled)), weights

    def _checked(self, override: Tensor, mask: Tensor) -> Tensor:
        """An override of the shape the model's weights have, zeroed on padding."""
        heads = self.pooling.heads
        shape = tuple(mask.shape) if heads == 1 else (mask.size(0), heads, mask.size(1))
        if tuple(override.shape) != shape:
            raise ValueError(f"attention_override: shape {tuple(override.shape)}, expected {shape}")
        keep = mask if heads == 1 else mask.unsqueeze(1)
        return override.to(dtype=next(self.parameters()).dtype) * keep
