"""Soft attention over image regions.

A CNN turns an image into a feature map ``(B, C, h, w)``; flattened, that is
``R = h * w`` region vectors ``(B, R, C)``. Soft attention gives every region
a weight (the weights of one image sum to 1) and returns the weighted sum of
the region vectors, the *context*. Two flavours:

* :class:`SpatialAttention` -- additive attention queried by a decoder state
  (Xu et al. 2015, "Show, Attend and Tell"): ``e_r = v^T tanh(W h + U a_r)``.
* :class:`AttentionPooling` -- no query: a 1x1 convolution scores every cell
  of the feature map, one attention mask per image; the pooled vector
  replaces global average pooling in a classifier.

Both return ``(context (B, C), weights (B, R))`` and take an optional bool
``mask (B, R)``, True = may attend (masked regions get exactly 0; see
:func:`attnkit.attention.scores.masked_softmax`).
"""

from __future__ import annotations

from torch import Tensor, nn

from attnkit.attention.modules import BahdanauAttention
from attnkit.attention.scores import attend, masked_softmax


def flatten_regions(feature_map: Tensor) -> Tensor:
    """``(B, C, h, w)`` feature map -> ``(B, R, C)`` region vectors, rows first (``R = h * w``)."""
    return feature_map.flatten(2).transpose(1, 2)  # (B, R, C)


def regions_to_grid(weights: Tensor, height: int, width: int) -> Tensor:
    """``(..., R)`` weights -> ``(..., h, w)`` maps (inverse of the flattening order above)."""
    return weights.reshape(*weights.shape[:-1], height, width)


class SpatialAttention(BahdanauAttention):
    """Additive attention over regions: ``e_r = v^T tanh(W h + U a_r)``, ``alpha = softmax(e)``.

    ``project_keys(regions (B, R, C)) -> (B, R, A)`` once per image batch;
    ``forward(query (B, Dq), regions (B, R, C), projected, mask (B, R))
    -> (context (B, C), weights (B, R))``. A ``(B, T, Dq)`` query attends for
    T steps at once and gives ``(B, T, C)``, ``(B, T, R)``.
    """

    def __init__(self, query_dim: int, feature_dim: int, attn_dim: int):
        super().__init__(query_dim, feature_dim, attn_dim)


class AttentionPooling(nn.Module):
    """Attention pooling with a 1x1-convolution mask over a feature map.

    Scores ``s = conv1x1(F)`` (or ``conv1x1(tanh(conv1x1(F)))`` with
    ``hidden``), ``alpha = softmax over the h*w cells``, context ``sum_r
    alpha_r F_r``. ``forward(feature_map (B, C, h, w), mask (B, R) | None)
    -> (context (B, C), weights (B, R))``.
    """

    def __init__(self, channels: int, hidden: int | None = None):
        super().__init__()
        if hidden:
            self.score = nn.Sequential(
                nn.Conv2d(channels, hidden, 1), nn.Tanh(), nn.Conv2d(hidden, 1, 1)
            )
        else:
            self.score = nn.Conv2d(channels, 1, 1)

    def forward(self, feature_map: Tensor, mask: Tensor | None = None) -> tuple[Tensor, Tensor]:
        scores = self.score(feature_map).flatten(1)  # (B, R)
        weights = masked_softmax(scores, mask)  # (B, R)
        regions = flatten_regions(feature_map)  # (B, R, C)
        context = attend(weights.unsqueeze(1), regions).squeeze(1)  # (B, C)
        return context, weights
