"""A Show-Attend-Tell style reader (Xu et al. 2015) for multi-digit strips.

The encoder, a small CNN, turns the image into a grid of ``R = h * w`` region
features ``(B, R, C)``. An LSTM decoder emits the digit string one digit at a
time; before each step it attends over the regions with additive attention
queried by its previous state (:class:`~attnkit.attention.spatial.SpatialAttention`):

    alpha_t = softmax_r(v^T tanh(W h_{t-1} + U a_r))        (B, R)
    z_t     = beta_t * sum_r alpha_tr a_r,  beta_t = sigmoid(f(h_{t-1}))  (the optional gate)
    h_t     = LSTM([E y_{t-1}; z_t], h_{t-1})
    p(y_t)  = softmax(L [h_t; z_t])

The initial state comes from the mean region feature. The doubly stochastic
regulariser ``lambda * sum_r (1 - sum_t alpha_tr)^2`` (optional) pushes every
region to receive attention at some step.

Vocabulary: ``0..9`` the digits, ``BOS``, ``EOS``, ``PAD`` (ignored by the loss).
Shapes: B batch, T output steps, R regions, C channels, V vocab.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from attnkit.attention.spatial import SpatialAttention, flatten_regions
from attnkit.errors import ConfigError
from attnkit.models.backend_scope import BackendScoped, in_backend_scope

BOS, EOS, PAD = 10, 11, 12
VOCAB_SIZE = 13


@dataclass
class ReaderConfig:
    """``model:`` with ``type: show_attend_tell`` -- the soft attention multi-digit reader."""

    channels: list[int] = field(default_factory=lambda: [32, 64, 128])
    """CNN encoder: output channels of each block (2 convs + 2x2 max-pool); the last is the region
    width C."""
    embed: int = 32
    """Width of the previous-digit embedding."""
    hidden: int = 256
    """Width of the LSTM decoder state."""
    attention_dim: int = 128
    """Width of the additive attention layer."""
    gate: bool = True
    """Gate the context with sigmoid(f(h)) (Xu et al.'s beta)."""
    doubly_stochastic: float = 0.0
    """Weight of the doubly stochastic regulariser sum_r (1 - sum_t alpha_tr)^2 (0: off)."""
    dropout: float = 0.2
    """Dropout before the output layer."""

    def validate(self, where: str) -> None:
        check_channels(self.channels, where)
        for name in ("embed", "hidden", "attention_dim"):
            if getattr(self, name) < 1:
                raise ConfigError(f"{where}.{name}: must be >= 1, got {getattr(self, name)}")


def check_channels(channels: list[int], where: str) -> None:
    """Config check shared by the CNN models: a non-empty list of positive widths."""
    if not channels or any(c < 1 for c in channels):
        raise ConfigError(
            f"{where}.channels: need a non-empty list of positive widths, got {channels}"
        )


def encode_strings(strings: list[str], max_len: int) -> tuple[Tensor, Tensor]:
    """Digit strings -> decoder inputs ``BOS d1 d2 ...`` and targets ``d1 d2 ... EOS``, each
    ``(B, max_len + 1)``."""
    inputs = torch.full((len(strings), max_len + 1), PAD, dtype=torch.long)
    targets = torch.full_like(inputs, PAD)
    for i, s in enumerate(strings):
        digits = [int(ch) for ch in s]
        if len(digits) > max_len:
            raise ValueError(f"string {s!r} is longer than {max_len} digits")
        inputs[i, : len(digits) + 1] = torch.tensor([BOS] + digits)
        targets[i, : len(digits) + 1] = torch.tensor(digits + [EOS])
    return inputs, targets


def decode_tokens(tokens: Tensor) -> list[str]:
    """Token rows ``(B, T)`` -> digit strings, each cut at its first EOS (non-digits dropped)."""
    out = []
    for row in tokens.tolist():
        digits = []
        for tok in row:
            if tok == EOS:
                break
            if tok < 10:
                digits.append(str(tok))
        out.append("".join(digits))
    return out


def conv_encoder(channels: list[int], in_channels: int = 1) -> nn.Sequential:
    """Blocks of ``[conv3x3, BN, ReLU] x 2`` then 2x2 max-pool, one block per entry of ``channels``.

    ``(B, in, H, W) -> (B, channels[-1], H / 2^n, W / 2^n)`` (floor at each pool).
    """
    layers: list[nn.Module] = []
    prev = in_channels
    for width in channels:
        for _ in range(2):
            layers += [
                nn.Conv2d(prev, width, 3, padding=1, bias=False),
                nn.BatchNorm2d(width),
                nn.ReLU(inplace=True),
            ]
            prev = width
        layers.append(nn.MaxPool2d(2))
    return nn.Sequential(*layers)


@dataclass
class ReaderOutput:
    logits: Tensor  # (B, T, V)
    weights: Tensor  # (B, T, R) attention over regions at each output step
    grid: tuple[int, int]  # (h, w) of the region grid, R = h * w


class ShowAttendTell(BackendScoped, nn.Module):
    """Encoder + attentive LSTM decoder.

    ``forward(images (B, 1, H, W), inputs (B, T)) -> ReaderOutput`` (teacher
    forcing); ``greedy(images, max_len) -> (tokens (B, T), weights (B, T, R), grid)``.
    Both run the same :meth:`step`, in the backend's scope.
    """

    def __init__(
        self,
        channels: list[int] = (32, 64, 128),
        embed: int = 32,
        hidden: int = 256,
        attention_dim: int = 128,
        gate: bool = True,
        dropout: float = 0.2,
        in_channels: int = 1,
    ):
        super().__init__()
        feature_dim = channels[-1]
        self.encoder = conv_encoder(list(channels), in_channels)
        self.embed = nn.Embedding(VOCAB_SIZE, embed)
        self.attention = SpatialAttention(hidden, feature_dim, attention_dim)
        self.gate = nn.Linear(hidden, feature_dim) if gate else None
        self.init_h = nn.Linear(feature_dim, hidden)
        self.init_c = nn.Linear(feature_dim, hidden)
        self.cell = nn.LSTMCell(embed + feature_dim, hidden)
        self.dropout = nn.Dropout(dropout)
        self.out = nn.Linear(hidden + feature_dim, VOCAB_SIZE)

    def encode(self, images: Tensor) -> tuple[Tensor, Tensor, tuple, tuple[int, int]]:
        """Images -> regions (B, R, C), projected regions (B, R, A), initial state, grid (h, w)."""
        fmap = self.encoder(images)  # (B, C, h, w)
        regions = flatten_regions(fmap)  # (B, R, C)
        mean = regions.mean(dim=1)  # (B, C)
        state = (torch.tanh(self.init_h(mean)), torch.tanh(self.init_c(mean)))
        return regions, self.attention.project_keys(regions), state, tuple(fmap.shape[-2:])

    @in_backend_scope
    def step(self, embedded: Tensor, state: tuple, regions: Tensor, projected: Tensor):
        """One output step: ``embedded (B, E)`` of the previous token -> (logits (B, V), weights
        (B, R), state)."""
        h, c = state
        context, weights = self.attention(h, regions, projected)  # (B, C), (B, R)
        if self.gate is not None:
            context = torch.sigmoid(self.gate(h)) * context
        h, c = self.cell(torch.cat([embedded, context], dim=-1), (h, c))
        logits = self.out(self.dropout(torch.cat([h, context], dim=-1)))  # (B, V)
        return logits, weights, (h, c)

    def forward(self, images: Tensor, inputs: Tensor) -> ReaderOutput:
        regions, projected, state, grid = self.encode(images)
        embedded = self.embed(inputs)  # (B, T, E), all steps at once
        logits, weights = [], []
        for t in range(inputs.shape[1]):
            step_logits, step_weights, state = self.step(embedded[:, t], state, regions, projected)
            logits.append(step_logits)
            weights.append(step_weights)
        return ReaderOutput(torch.stack(logits, dim=1), torch.stack(weights, dim=1), grid)

    @torch.no_grad()
    def greedy(self, images: Tensor, max_len: int) -> tuple[Tensor, Tensor, tuple[int, int]]:
        """Greedy decoding of up to ``max_len`` tokens (EOS included): tokens (B, T), weights
        (B, T, R)."""
        regions, projected, state, grid = self.encode(images)
        token = torch.full((images.shape[0],), BOS, dtype=torch.long, device=images.device)
        tokens, weights = [], []
        done = torch.zeros_like(token, dtype=torch.bool)
        for _ in range(max_len):
            logits, step_weights, state = self.step(self.embed(token), state, regions, projected)
            token = logits.argmax(dim=-1)
            tokens.append(token)
            weights.append(step_weights)
            done |= token == EOS
            if bool(done.all()):
                break
        return torch.stack(tokens, dim=1), torch.stack(weights, dim=1), grid


def reader_loss(
    output: ReaderOutput, targets: Tensor, doubly_stochastic: float = 0.0
) -> tuple[Tensor, Tensor]:
    """(total loss, cross entropy): token cross entropy (PAD ignored) + the doubly stochastic term.

    The regulariser sums attention over the real steps only (PAD steps masked).
    """
    logits = output.logits
    ce = F.cross_entropy(
        logits.reshape(-1, logits.shape[-1]), targets.reshape(-1), ignore_index=PAD
    )
    if doubly_stochastic <= 0:
        return ce, ce
    real = (targets != PAD).unsqueeze(-1).to(output.weights.dtype)  # (B, T, 1)
    coverage = (output.weights * real).sum(dim=1)  # (B, R)
    penalty = ((1.0 - coverage) ** 2).sum(dim=1).mean()
    return ce + doubly_stochastic * penalty, ce
