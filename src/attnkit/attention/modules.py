"""Attention modules: they own parameters, the score functions compute.

Every module follows one protocol:

* ``project_keys(keys)`` once per source batch: keys (B, S, Dk) -> whatever
  the module needs precomputed (projected keys, per-head keys and values).
* ``forward(query, keys, projected, mask)`` -> ``(context, weights)``.
* ``loop_spec()`` -> a :class:`ScoreSpec` saying which scores a fast loop (:mod:`attnkit.accel`)
  may compute in the module's place, or None: then decoders call the module itself.
  ``query`` is (B, T, Dq) or one step (B, Dq); ``mask`` (B, S) bool, True =
  may attend. ``context`` is (B, T, Dk) (or (B, Dk)), ``weights`` (B, T, S)
  (or (B, S)). The context always has the keys' width, so decoders do not
  care which attention they hold.

The protocol's base class is :class:`attnkit.attention.base.Attention`. ``multihead`` is
:class:`attnkit.attention.qkv.MultiHeadAttention`, the one multi-head attention, which every
attention of the Transformer is too.

``build_attention(name, query_dim, key_dim, attn_dim, heads)`` is the registry
the models and configs use. A model's ``attention`` may also be :data:`NO_ATTENTION`
(``none``), which is no module and has no entry here: the encoder-decoder without attention,
whose decoder reads one fixed context vector instead
(:class:`attnkit.models.decoders.FixedContextDecoder`).
"""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch import Tensor, nn

from attnkit.attention.base import Attention, AttentionOptions, ScoreSpec
from attnkit.attention.cosine import CosineAttention
from attnkit.attention.local import LocalAttention, LocationAttention
from attnkit.attention.qkv import MultiHeadAttention
from attnkit.attention.scores import additive_scores, concat_scores, dot_scores, scaled_dot_scores
from attnkit.errors import ConfigError

__all__ = [
    "ATTENTION_TYPES",
    "NO_ATTENTION",
    "Attention",
    "AttentionOptions",
    "BahdanauAttention",
    "CosineAttention",
    "LocalAttention",
    "LocationAttention",
    "LuongAttention",
    "MultiHeadAttention",
    "ScaledDotAttention",
    "ScoreSpec",
    "UniformAttention",
    "build_attention",
]


class BahdanauAttention(Attention):
    """Additive attention (Bahdanau et al. 2015): ``v^T tanh(W s_{t-1} + U h_s)``."""

    uses_previous_state = True

    def __init__(self, query_dim: int, key_dim: int, attn_dim: int):
        super().__init__()
        self.query_proj = nn.Linear(query_dim, attn_dim, bias=False)
        self.key_proj = nn.Linear(key_dim, attn_dim, bias=True)
        self.v = nn.Parameter(torch.empty(attn_dim).uniform_(-0.1, 0.1))

    def project_keys(self, keys: Tensor) -> Tensor:
        return self.key_proj(keys)  # (B, S, A)

    def scores(self, query: Tensor, projected: Tensor) -> Tensor:
        return additive_scores(self.query_proj(query), projected, self.v)

    def loop_spec(self) -> ScoreSpec:
        return ScoreSpec("additive", self.query_proj.weight, self.v)


class LuongAttention(Attention):
    """Luong et al. (2015) global attention with score ``dot``, ``general`` or ``concat``.

    It is queried with the current decoder state h_t.
    """

    SCORES = ("dot", "general", "concat")

    def __init__(self, score: str, query_dim: int, key_dim: int, attn_dim: int | None = None):
        super().__init__()
        if score not in self.SCORES:
            raise ConfigError(f"unknown Luong score {score!r}; valid: {', '.join(self.SCORES)}")
        self.score = score
        if score == "dot" and query_dim != key_dim:
            raise ConfigError(
                "luong-dot needs the decoder state and encoder states of equal width, got "
                f"{query_dim} and {key_dim}: set the encoder hidden size (x2 if bidirectional) "
                "equal to the decoder's"
            )
        if score == "general":
            # W_a applied to the keys once per batch: score = h_t . (W_a h_s)
            self.key_proj = nn.Linear(key_dim, query_dim, bias=False)
        elif score == "concat":
            attn_dim = attn_dim or query_dim
            self.query_proj = nn.Linear(query_dim, attn_dim, bias=False)
            self.key_proj = nn.Linear(key_dim, attn_dim, bias=True)
            self.v = nn.Parameter(torch.empty(attn_dim).uniform_(-0.1, 0.1))

    def project_keys(self, keys: Tensor) -> Tensor:
        return keys if self.score == "dot" else self.key_proj(keys)

    def scores(self, query: Tensor, projected: Tensor) -> Tensor:
        if self.score == "concat":
            return concat_scores(self.query_proj(query), projected, self.v)
        return dot_scores(query, projected)

    def loop_spec(self) -> ScoreSpec:
        if self.score == "concat":
            return ScoreSpec("additive", self.query_proj.weight, self.v)
        return ScoreSpec("dot")  # general: W_a is inside the projected keys


class ScaledDotAttention(Attention):
    """Scaled dot-product attention (Vaswani et al. 2017) with learned query/key projections."""

    def __init__(self, query_dim: int, key_dim: int, attn_dim: int):
        super().__init__()
        self.query_proj = nn.Linear(query_dim, attn_dim, bias=False)
        self.key_proj = nn.Linear(key_dim, attn_dim, bias=False)

    def project_keys(self, keys: Tensor) -> Tensor:
        return self.key_proj(keys)  # (B, S, A)

    def scores(self, query: Tensor, projected: Tensor) -> Tensor:
        return scaled_dot_scores(self.query_proj(query), projected)

    def loop_spec(self) -> ScoreSpec:
        return ScoreSpec("dot", self.query_proj.weight, scale=self.query_proj.out_features**-0.5)


class UniformAttention(Attention):
    """No scoring at all: the weights are uniform over the unmasked source, whatever the query
    (the baseline of Wiegreffe & Pinter 2019: how much does a task need learned attention?).
    No parameters; the context is the mean of the keys."""

    def scores(self, query: Tensor, projected: Tensor) -> Tensor:
        return projected.new_zeros(query.shape[:-1] + projected.shape[1:2])  # (B, T, S)


AttentionBuilder = Callable[..., Attention]

#: what a model's ``attention`` names when it has none (no module: not in the registry)
NO_ATTENTION = "none"

_DEFAULTS = AttentionOptions()

#: name -> builder(query_dim, key_dim, attn_dim, heads, options=AttentionOptions())
ATTENTION_TYPES: dict[str, AttentionBuilder] = {
    "bahdanau": lambda q, k, a, h, o=_DEFAULTS: BahdanauAttention(q, k, a),
    "luong-dot": lambda q, k, a, h, o=_DEFAULTS: LuongAttention("dot", q, k),
    "luong-general": lambda q, k, a, h, o=_DEFAULTS: LuongAttention("general", q, k),
    "luong-concat": lambda q, k, a, h, o=_DEFAULTS: LuongAttention("concat", q, k, a),
    "luong-location": lambda q, k, a, h, o=_DEFAULTS: LocationAttention(q, o.positions),
    "local-m": lambda q, k, a, h, o=_DEFAULTS: LocalAttention(False, q, k, a, o.window),
    "local-p": lambda q, k, a, h, o=_DEFAULTS: LocalAttention(True, q, k, a, o.window),
    "cosine": lambda q, k, a, h, o=_DEFAULTS: CosineAttention(q, k, o.beta),
    "scaled-dot": lambda q, k, a, h, o=_DEFAULTS: ScaledDotAttention(q, k, a),
    # also the Transformer's
    "multihead": lambda q, k, a, h, o=_DEFAULTS: MultiHeadAttention(q, k, a, h),
    "uniform": lambda q, k, a, h, o=_DEFAULTS: (
        UniformAttention()
    ),  # the baseline: no learned weights
}


def build_attention(
    name: str,
    query_dim: int,
    key_dim: int,
    attn_dim: int,
    heads: int = 1,
    options: AttentionOptions = _DEFAULTS,
) -> Attention:
    """Registry lookup; an unknown name is a ConfigError listing the valid ones. ``options``:
    the settings only some attentions read (window, beta, positions)."""
    try:
        builder = ATTENTION_TYPES[name]
    except KeyError:
        raise ConfigError(
            f"unknown attention {name!r}; valid: {', '.join(ATTENTION_TYPES)}"
        ) from None
    return builder(query_dim, key_dim, attn_dim, heads, options)
