"""Attention that remembers where it looked: location-aware attention (Chorowski et al. 2015).

Content-based (Bahdanau) energies ``e_{t,s} = v^T tanh(W q_t + V h_s + b)`` see what a frame
holds, not where the last step looked, so over a long utterance of similar frames they can
jump or stall. Location-aware attention adds features of the previous alignment: ``F`` is a
1-D convolution over ``alpha_{t-1}`` (``channels`` filters of width ``kernel``), and

    e_{t,s} = v^T tanh(W q_t + V h_s + U f_{t,s} + b),    f_t = F * alpha_{t-1}.

:class:`AlignmentAttention` computes either (``location=False``: content only) for one decoder
step at a time, since each step needs the last one's weights.

Shapes: B batch, S frames (keys), Dq query width, Dk key width, A attention width, C channels.
"""

from __future__ import annotations

import torch
from torch import Tensor, nn

from attnkit.attention.scores import attend, masked_softmax


class AlignmentAttention(nn.Module):
    """Additive attention over frames, location-aware when ``location`` (see the module)."""

    def __init__(
        self,
        query_dim: int,
        key_dim: int,
        attn_dim: int,
        location: bool = True,
        channels: int = 10,
        kernel: int = 31,
    ):
        super().__init__()
        if kernel < 1 or kernel % 2 == 0:
            raise ValueError(f"the location kernel must be odd and positive, got {kernel}")
        self.query_proj = nn.Linear(query_dim, attn_dim, bias=False)
        self.key_proj = nn.Linear(key_dim, attn_dim, bias=True)
        self.v = nn.Parameter(torch.empty(attn_dim).uniform_(-0.1, 0.1))
        self.location = location
        if location:
            self.conv = nn.Conv1d(1, channels, kernel, padding=kernel // 2, bias=False)
            self.location_proj = nn.Linear(channels, attn_dim, bias=False)

    def project_keys(self, keys: Tensor) -> Tensor:
        """Keys (B, S, Dk) -> V h_s + b (B, S, A), once per utterance."""
        return self.key_proj(keys)

    def energies(self, query: Tensor, projected: Tensor, previous: Tensor) -> Tensor:
        """query (B, Dq), projected keys (B, S, A), previous weights (B, S) -> (B, S)."""
        hidden = projected + self.query_proj(query).unsqueeze(1)  # (B, S, A)
        if self.location:
            features = self.conv(previous.unsqueeze(1)).transpose(1, 2)  # (B, S, C)
            hidden = hidden + self.location_proj(features)
        return torch.tanh(hidden) @ self.v  # (B, S)

    def forward(
        self,
        query: Tensor,
        keys: Tensor,
        projected: Tensor,
        previous: Tensor,
        mask: Tensor | None = None,
    ) -> tuple[Tensor, Tensor]:
        """One step: query (B, Dq), keys (B, S, Dk), projected (B, S, A), previous weights
        (B, S), mask (B, S) True = may attend -> context (B, Dk), weights (B, S)."""
        weights = masked_softmax(self.energies(query, projected, previous), mask)  # (B, S)
        context = attend(weights.unsqueeze(1), keys).squeeze(1)  # (B, Dk)
        return context, weights


def first_alignment(mask: Tensor) -> Tensor:
    """The alignment before the first step: all weight on frame 0. mask (B, S) -> (B, S)."""
    start = torch.zeros(mask.shape, dtype=torch.float32, device=mask.device)
    start[:, 0] = 1.0
    return start
