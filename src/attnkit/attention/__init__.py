"""Attention: pure score functions (scores.py) and modules that own parameters (modules.py)."""

from attnkit.attention.exact import AttentionImpl
from attnkit.attention.implementations import IMPLEMENTATIONS, ImplOptions, build_implementation
from attnkit.attention.modules import (
    ATTENTION_TYPES,
    Attention,
    AttentionOptions,
    BahdanauAttention,
    CosineAttention,
    LocalAttention,
    LocationAttention,
    LuongAttention,
    MultiHeadAttention,
    ScaledDotAttention,
    build_attention,
)
from attnkit.attention.scores import (
    additive_scores,
    attend,
    concat_scores,
    cosine_scores,
    dot_scores,
    gaussian_log_weights,
    general_scores,
    local_window,
    location_scores,
    masked_softmax,
    scaled_dot_scores,
)

__all__ = [
    "ATTENTION_TYPES",
    "IMPLEMENTATIONS",
    "Attention",
    "AttentionImpl",
    "AttentionOptions",
    "BahdanauAttention",
    "CosineAttention",
    "LocalAttention",
    "LocationAttention",
    "LuongAttention",
    "MultiHeadAttention",
    "ScaledDotAttention",
    "build_attention",
    "build_implementation",
    "ImplOptions",
    "additive_scores",
    "attend",
    "concat_scores",
    "cosine_scores",
    "dot_scores",
    "gaussian_log_weights",
    "general_scores",
    "local_window",
    "location_scores",
    "masked_softmax",
    "scaled_dot_scores",
]
