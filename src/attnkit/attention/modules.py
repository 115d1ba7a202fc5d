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

``build_attention(name, query_dim, key_dim, attn_dim, heads)`` is the registry
the models and configs use. A model's ``attention`` may also be :data:`NO_ATTENTION`
(``none``), which is no module and has no entry here: the encoder-decoder without attention,
whose decoder reads one fixed context vector instead
(:class:`attnkit.models.decoders.FixedContextDecoder`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import torch
from torch import Tensor, nn

from attnkit.attention.scores import (
    additive_scores,
    attend,
    concat_scores,
    dot_scores,
    masked_softmax,
    scaled_dot_scores,
)
from attnkit.errors import ConfigError


@dataclass(frozen=True, eq=False)
class ScoreSpec:
    """The scores a module computes, for a loop that computes them itself.

    kind ``additive``: v . tanh(q W_q^T + P); ``dot``: scale * P (q W_q^T). q (B, H) is the
    query, P (B, S, A) ``project_keys(keys)``; query_weight W_q (A, H), or None where the
    query is used as it is; v (A,) for additive scores.
    """

    kind: str
    query_weight: Tensor | None = None
    v: Tensor | None = None
    scale: float = 1.0


#: the methods that define what a module computes; a subclass redefining one of them without
#: its own loop_spec() gets None (a fast loop would compute its parent's function instead)
_SCORING = ("scores", "forward", "project_keys")


class Attention(nn.Module):
    """Base class: handles one-step queries and the mask shape, subclasses score."""

    #: whether the query is the previous decoder state s_{t-1} (Bahdanau) rather than h_t
    uses_previous_state = False

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        if "loop_spec" not in vars(cls) and any(name in vars(cls) for name in _SCORING):
            cls.loop_spec = Attention.loop_spec

    def loop_spec(self) -> ScoreSpec | None:
        """What a fast loop may compute in this module's place; None (the default): nothing,
        the module is called."""
        return None

    def project_keys(self, keys: Tensor):
        """(B, S, Dk) -> precomputed key-side tensors; identity by default."""
        return keys

    def scores(self, query: Tensor, projected) -> Tensor:
        """(B, T, Dq) query -> (B, T, S) scores.  Subclasses implement."""
        raise NotImplementedError

    def forward(self, query: Tensor, keys: Tensor, projected=None, mask: Tensor | None = None):
        one_step = query.dim() == 2
        if one_step:
            query = query.unsqueeze(1)  # (B, 1, Dq)
        if projected is None:
            projected = self.project_keys(keys)
        scores = self.scores(query, projected)  # (B, T, S)
        weights = masked_softmax(scores, None if mask is None else mask.unsqueeze(1))
        context = attend(weights, keys)  # (B, T, Dk)
        if one_step:
            return context.squeeze(1), weights.squeeze(1)
        return context, weights


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


class MultiHeadAttention(Attention):
    """Multi-head scaled dot-product attention over RNN encoder states.

    ``weights`` returned by ``forward`` are the mean over heads (B, T, S), so
    every attention type pictures the same way; ``forward_heads`` gives the
    per-head weights (B, H, T, S).
    """

    def __init__(self, query_dim: int, key_dim: int, attn_dim: int, heads: int):
        super().__init__()
        if attn_dim % heads:
            raise ConfigError(
                f"model.attention_dim ({attn_dim}) must be divisible by model.heads ({heads})"
            )
        self.heads = heads
        self.query_proj = nn.Linear(query_dim, attn_dim, bias=False)
        self.key_proj = nn.Linear(key_dim, attn_dim, bias=False)
        self.value_proj = nn.Linear(key_dim, attn_dim, bias=False)
        self.out_proj = nn.Linear(attn_dim, key_dim, bias=False)

    def _split(self, x: Tensor) -> Tensor:
        b, n, _ = x.shape
        return x.view(b, n, self.heads, -1).transpose(1, 2)  # (B, H, N, A/H)

    def project_keys(self, keys: Tensor) -> tuple[Tensor, Tensor]:
        return self._split(self.key_proj(keys)), self._split(self.value_proj(keys))

    def forward_heads(self, query: Tensor, projected, mask: Tensor | None = None):
        """(B, T, Dq) -> context (B, T, Dk), per-head weights (B, H, T, S)."""
        keys_h, values_h = projected
        q = self._split(self.query_proj(query))  # (B, H, T, A/H)
        scores = scaled_dot_scores(q, keys_h)  # (B, H, T, S)
        weights = masked_softmax(scores, None if mask is None else mask[:, None, None, :])
        context = attend(weights, values_h)  # (B, H, T, A/H)
        b, h, t, d = context.shape
        context = context.transpose(1, 2).reshape(b, t, h * d)  # (B, T, A)
        return self.out_proj(context), weights

    def forward(self, query: Tensor, keys: Tensor, projected=None, mask: Tensor | None = None):
        one_step = query.dim() == 2
        if one_step:
            query = query.unsqueeze(1)
        if projected is None:
            projected = self.project_keys(keys)
        context, weights = self.forward_heads(query, projected, mask)
        weights = weights.mean(dim=1)  # (B, T, S)
        if one_step:
            return context.squeeze(1), weights.squeeze(1)
        return context, weights


AttentionBuilder = Callable[[int, int, int, int], Attention]

#: what a model's ``attention`` names when it has none (no module: not in the registry)
NO_ATTENTION = "none"

#: name -> builder(query_dim, key_dim, attn_dim, heads)
ATTENTION_TYPES: dict[str, AttentionBuilder] = {
    "bahdanau": lambda q, k, a, h: BahdanauAttention(q, k, a),
    "luong-dot": lambda q, k, a, h: LuongAttention("dot", q, k),
    "luong-general": lambda q, k, a, h: LuongAttention("general", q, k),
    "luong-concat": lambda q, k, a, h: LuongAttention("concat", q, k, a),
    "scaled-dot": lambda q, k, a, h: ScaledDotAttention(q, k, a),
    "multihead": lambda q, k, a, h: MultiHeadAttention(q, k, a, h),
}


def build_attention(
    name: str, query_dim: int, key_dim: int, attn_dim: int, heads: int = 1
) -> Attention:
    """Registry lookup; an unknown name is a ConfigError listing the valid ones."""
    try:
        builder = ATTENTION_TYPES[name]
    except KeyError:
        raise ConfigError(
            f"unknown attention {name!r}; valid: {', '.join(ATTENTION_TYPES)}"
        ) from None
    return builder(query_dim, key_dim, attn_dim, heads)
