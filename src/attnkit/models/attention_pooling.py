"""Single-step soft attention classifier: a CNN, one attention mask, a linear layer.

The CNN gives a feature map ``(B, C, h, w)``; a 1x1 convolution scores each
of the ``R = h * w`` cells, a softmax over the cells gives one attention mask
per image (:class:`~attnkit.attention.spatial.AttentionPooling`), and the
attention-weighted feature vector is classified. On cluttered MNIST the mask
should land on the digit and ignore the clutter, which the pictures show.

Shapes: B batch, C channels, R regions.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import torch.nn.functional as F
from torch import Tensor, nn

from attnkit.attention.spatial import AttentionPooling
from attnkit.models.backend_scope import BackendScoped, in_backend_scope
from attnkit.models.show_attend_tell import check_channels, conv_encoder


@dataclass
class PoolingConfig:
    """``model:`` with ``type: attention_pooling`` -- CNN + one 1x1-conv attention mask +
    classifier."""

    channels: list[int] = field(default_factory=lambda: [32, 64, 128])
    """CNN encoder: output channels of each block (2 convs + 2x2 max-pool)."""
    attention_hidden: int | None = 64
    """Hidden width of the 1x1-conv scorer (null: a single 1x1 conv)."""
    dropout: float = 0.2
    """Dropout before the classifier."""

    def validate(self, where: str) -> None:
        check_channels(self.channels, where)


@dataclass
class PoolingOutput:
    log_probs: Tensor  # (B, 10)
    weights: Tensor  # (B, R) the attention mask, rows sum to 1
    grid: tuple[int, int]  # (h, w), R = h * w


class AttentionPoolingClassifier(BackendScoped, nn.Module):
    """``forward(images (B, 1, H, W)) -> PoolingOutput``."""

    def __init__(
        self,
        channels: list[int] = (32, 64, 128),
        attention_hidden: int | None = 64,
        dropout: float = 0.2,
        classes: int = 10,
        in_channels: int = 1,
    ):
        super().__init__()
        self.encoder = conv_encoder(list(channels), in_channels)
        self.pool = AttentionPooling(channels[-1], attention_hidden)
        self.dropout = nn.Dropout(dropout)
        self.classifier = nn.Linear(channels[-1], classes)

    @in_backend_scope
    def forward(self, images: Tensor) -> PoolingOutput:
        fmap = self.encoder(images)  # (B, C, h, w)
        context, weights = self.pool(fmap)  # (B, C), (B, R)
        log_probs = F.log_softmax(self.classifier(self.dropout(context)), dim=-1)  # (B, 10)
        return PoolingOutput(log_probs, weights, tuple(fmap.shape[-2:]))
