"""Attention: pure score functions (scores.py) and modules that own parameters (modules.py)."""

from attnkit.attention.modules import (
    ATTENTION_TYPES,
    Attention,
    BahdanauAttention,
    LuongAttention,
    MultiHeadAttention,
    ScaledDotAttention,
    build_attention,
)
from attnkit.attention.scores import (
    additive_scores,
    attend,
    concat_scores,
    dot_scores,
    general_scores,
    masked_softmax,
    scaled_dot_scores,
)

__all__ = [
    "ATTENTION_TYPES",
    "Attention",
    "BahdanauAttention",
    "LuongAttention",
    "MultiHeadAttention",
    "ScaledDotAttention",
    "build_attention",
    "additive_scores",
    "attend",
    "concat_scores",
    "dot_scores",
    "general_scores",
    "masked_softmax",
    "scaled_dot_scores",
]
