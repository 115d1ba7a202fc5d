"""The model section of a Transformer's experiment file (``arch: transformer``):
:class:`TransformerConfig`, read by :mod:`attnkit.models.transformer`."""

from __future__ import annotations

from dataclasses import dataclass

from attnkit.attention.implementations import IMPLEMENTATIONS, ImplOptions
from attnkit.config import join_key
from attnkit.errors import ConfigError
from attnkit.models.positions import POSITIONAL

#: what ``model.attention`` reads for a Transformer (reports and the model list show it)
ATTENTION_NAME = "transformer"


@dataclass
class TransformerConfig:
    """The model section of an experiment file with ``arch: transformer``."""

    arch: str = "transformer"
    embedding_dim: int = 256  # the model width D (embeddings, every sub-layer's output)
    encoder_layers: int = 3
    decoder_layers: int = 3
    heads: int = 4  # attention heads per layer; embedding_dim must be divisible by it
    ff_dim: int = 1024  # inner width of each feed-forward sub-layer
    dropout: float = 0.1  # on embeddings, sub-layer outputs, attention weights, feed-forward
    tie_output: bool = False  # the output layer reuses the target embeddings (Press & Wolf 2017)
    positional: str = "sinusoidal"  # how order enters: sinusoidal | learned (a table) | none
    max_positions: int = 512  # learned: rows of the table, the longest source or target + 1
    # how attention is computed: auto (the backend decides, explicit or fused) | explicit | sdpa |
    # chunked | local | linear | performer (attnkit.attention.implementations)
    attention_impl: str = "auto"
    attention_window: int = 64  # local: the half width w of the window [i - w, i + w]
    global_tokens: int = 0  # local: the first positions every position attends to (and back)
    random_features: int = 64  # performer: random features per head
    attention_chunk: int = 128  # chunked: keys per tile

    CHOICES = {
        "arch": ("transformer",),
        "positional": tuple(POSITIONAL),
        "attention_impl": ("auto", *IMPLEMENTATIONS),
    }
    #: max_positions sizes the learned table only (see attnkit.config.check_applicable)
    APPLIES = {
        "max_positions": ("positional", ("learned",), "model.positional"),
        "attention_window": ("attention_impl", ("local",), "model.attention_impl"),
        "global_tokens": ("attention_impl", ("local",), "model.attention_impl"),
        "random_features": ("attention_impl", ("performer",), "model.attention_impl"),
        "attention_chunk": ("attention_impl", ("chunked",), "model.attention_impl"),
    }

    def validate(self, where: str) -> None:
        sizes = ("embedding_dim", "encoder_layers", "decoder_layers", "heads", "ff_dim")
        knobs = ("attention_window", "random_features", "attention_chunk")
        for name in (*sizes, "max_positions", *knobs):
            if getattr(self, name) < 1:
                raise ConfigError(
                    f"{join_key(where, name)}: must be at least 1, got {getattr(self, name)}"
                )
        if self.embedding_dim % self.heads:
            raise ConfigError(
                f"{join_key(where, 'embedding_dim')}: {self.embedding_dim} is not divisible by "
                f"model.heads ({self.heads})"
            )
        if not 0.0 <= self.dropout < 1.0:
            raise ConfigError(
                f"{join_key(where, 'dropout')}: must be in [0, 1), got {self.dropout}"
            )
        if self.global_tokens < 0:
            raise ConfigError(
                f"{join_key(where, 'global_tokens')}: must be at least 0, got {self.global_tokens}"
            )

    def check_lengths(self, max_src_len: int, max_tgt_len: int, where: str) -> None:
        """ConfigError when a learned table is shorter than the data's longest source
        (``max_src_len``, </s> included) or decoder input (<s> + ``max_tgt_len`` tokens)."""
        longest = max(max_src_len, max_tgt_len + 1)
        if self.positional == "learned" and self.max_positions < longest:
            raise ConfigError(
                f"{join_key(where, 'max_positions')}: {self.max_positions} learned positions, "
                f"but data.max_src_len {max_src_len} and data.max_tgt_len {max_tgt_len} allow "
                f"sequences of {longest}; raise it to at least {longest} or lower those"
            )
        if self.attention_impl == "local" and self.attention_window >= longest:
            raise ConfigError(
                f"{join_key(where, 'attention_window')}: {self.attention_window} is not smaller "
                f"than the longest input ({longest} positions, from data.max_src_len and "
                "data.max_tgt_len + 1): every key would be in the window; lower it or use "
                "model.attention_impl explicit"
            )

    def impl_options(self, seed: int) -> ImplOptions:
        """The knobs of ``attention_impl``; ``seed``: performer's features (one per attention)."""
        return ImplOptions(
            window=self.attention_window,
            global_tokens=self.global_tokens,
            features=self.random_features,
            seed=seed,
            chunk=self.attention_chunk,
            strict=False,  # batches vary in length: check_lengths checks the configured ones
        )

    @property
    def attention(self) -> str:
        return ATTENTION_NAME

    @property
    def layers_and_heads(self) -> tuple[int, int]:
        """(L, H) of the cross-attention decoding returns: decoder layers, heads."""
        return self.decoder_layers, self.heads
