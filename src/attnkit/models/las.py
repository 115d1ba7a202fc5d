"""Listen, Attend and Spell (Chan et al. 2016): a speller attending over a listener's frames.

* **Listener**: ``stack`` consecutive feature frames concatenated into one (a lower frame rate
  before any LSTM: the cheap part of the reduction, Sak et al. 2015), a BiLSTM over those,
  then ``pyramid_layers`` pyramidal BiLSTMs, each reading pairs of consecutive frames
  concatenated, so the speller attends over ``T / (stack 2^pyramid_layers)`` frames (frames
  left over at the end are dropped).
* **Speller**: an LSTM cell fed the previous output's embedding and the previous context; at
  each step its state queries :class:`~attnkit.attention.location_aware.AlignmentAttention`
  (content, or location-aware: Chorowski et al. 2015), and ``[state; context]`` scores the next
  output.

Shapes: B batch, T feature frames, F mel bands, S listener frames, U output steps, V outputs,
H listener width per direction, D speller width.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor, nn
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

from attnkit.attention.location_aware import AlignmentAttention, first_alignment
from attnkit.errors import ConfigError

ATTENTIONS = ("location", "content")
KINDS = ("las", "ctc", "transformer")


@dataclass
class LASConfig:
    """The ``model:`` section of a speech experiment (``kind: ctc`` reads the listener's keys
    and ``dropout``: :mod:`attnkit.models.ctc`; ``kind: transformer`` reads ``model_dim`` to
    ``decoder_layers`` and ``dropout``: :mod:`attnkit.models.speech_transformer`)."""

    # las (attention) | ctc (no attention: attnkit.models.ctc) | transformer (over frames)
    kind: str = "las"
    stack: int = 1  # feature frames concatenated into one before the listener (stride too)
    listener_hidden: int = 128  # LSTM width per direction of every listener layer
    pyramid_layers: int = 2  # each halves the frames the speller attends over
    speller_hidden: int = 256  # LSTM width of the speller
    embedding: int = 32  # width of the previous output's embedding
    attention: str = "location"  # location (Chorowski et al. 2015) | content (Bahdanau)
    attention_dim: int = 128  # width A of the additive energies
    location_channels: int = 10  # location: filters over the previous alignment
    location_kernel: int = 31  # location: their width in listener frames (odd)
    # between the listener layers and before the output layer (transformer: every sub-layer)
    dropout: float = 0.1
    model_dim: int = 128  # transformer: the width D of the front end's output and every layer
    heads: int = 4  # transformer: attention heads per layer; model_dim must be divisible by it
    ff_dim: int = 256  # transformer: inner width of each feed-forward sub-layer
    encoder_layers: int = 2  # transformer: self-attention layers over the subsampled frames
    decoder_layers: int = 2  # transformer: decoder layers (each with cross-attention)

    CHOICES = {"attention": ATTENTIONS, "kind": KINDS}

    def validate(self, where: str) -> None:
        sizes = ("listener_hidden", "speller_hidden", "embedding", "attention_dim", "model_dim")
        for name in (*sizes, "heads", "ff_dim", "encoder_layers", "decoder_layers"):
            if getattr(self, name) < 1:
                raise ConfigError(f"{where}.{name}: must be at least 1, got {getattr(self, name)}")
        if not 1 <= self.stack <= 8:
            raise ConfigError(f"{where}.stack: must be 1 to 8, got {self.stack}")
        if not 0 <= self.pyramid_layers <= 5:
            raise ConfigError(f"{where}.pyramid_layers: must be 0 to 5, got {self.pyramid_layers}")
        if self.location_kernel < 1 or self.location_kernel % 2 == 0:
            raise ConfigError(
                f"{where}.location_kernel: must be odd and positive, got {self.location_kernel}"
            )
        if self.model_dim % self.heads:
            raise ConfigError(
                f"{where}.model_dim: {self.model_dim} is not divisible by {where}.heads "
                f"({self.heads})"
            )
        if not 0 <= self.dropout < 1:
            raise ConfigError(f"{where}.dropout: must be in [0, 1), got {self.dropout}")


class Listener(nn.Module):
    """Features (B, T, F) with lengths (B,) -> frames (B, S, 2H) and their lengths (B,)."""

    def __init__(self, n_mels: int, cfg: LASConfig):
        super().__init__()
        h, self.stack = cfg.listener_hidden, cfg.stack
        self.first = nn.LSTM(n_mels * cfg.stack, h, batch_first=True, bidirectional=True)
        self.pyramid = nn.ModuleList(
            nn.LSTM(4 * h, h, batch_first=True, bidirectional=True)
            for _ in range(cfg.pyramid_layers)
        )
        self.dropout = nn.Dropout(cfg.dropout)

    @staticmethod
    def _run(lstm: nn.LSTM, x: Tensor, lengths: Tensor) -> Tensor:
        packed = pack_padded_sequence(x, lengths.cpu(), batch_first=True, enforce_sorted=False)
        out, _ = lstm(packed)
        return pad_packed_sequence(out, batch_first=True, total_length=x.size(1))[0]

    @property
    def stride(self) -> int:
        """Feature frames per listener frame."""
        return self.stack * 2 ** len(self.pyramid)

    def forward(self, features: Tensor, lengths: Tensor) -> tuple[Tensor, Tensor]:
        b, t, f = features.shape
        if t < self.stride:  # too short for one listener frame: zero-padded to one
            features = nn.functional.pad(features, (0, 0, 0, self.stride - t))
            t = self.stride
        if self.stack > 1:
            features = features[:, : t - t % self.stack].reshape(b, t // self.stack, -1)
            lengths = torch.clamp(lengths // self.stack, min=1)  # (B, T/k, kF)
        x = self._run(self.first, features, lengths)  # (B, T, 2H)
        for lstm in self.pyramid:
            b, t, d = x.shape
            x = x[:, : t - t % 2].reshape(b, t // 2, 2 * d)  # (B, T/2, 4H): pairs of frames
            lengths = torch.clamp(lengths // 2, min=1)
            x = self._run(lstm, self.dropout(x), lengths)  # (B, T/2, 2H)
        return x, lengths


class LAS(nn.Module):
    """Listen, Attend and Spell over ``n_mels`` features, spelling ``vocab_size`` outputs
    (``bos`` starts a spelling, an output of ``eos`` ends it)."""

    def __init__(self, cfg: LASConfig, n_mels: int, vocab_size: int, bos: int, eos: int):
        super().__init__()
        self.cfg, self.bos, self.eos = cfg, bos, eos
        self.listener = Listener(n_mels, cfg)
        keys = 2 * cfg.listener_hidden
        self.embed = nn.Embedding(vocab_size, cfg.embedding)
        self.cell = nn.LSTMCell(cfg.embedding + keys, cfg.speller_hidden)
        self.attention = AlignmentAttention(
            cfg.speller_hidden,
            keys,
            cfg.attention_dim,
            location=cfg.attention == "location",
            channels=cfg.location_channels,
            kernel=cfg.location_kernel,
        )
        self.out = nn.Linear(cfg.speller_hidden + keys, vocab_size)
        self.dropout = nn.Dropout(cfg.dropout)

    def listen(self, features: Tensor, lengths: Tensor) -> tuple[Tensor, Tensor]:
        """Features (B, T, F), lengths (B,) -> frames (B, S, 2H) and their mask (B, S)."""
        frames, lengths = self.listener(features, lengths)
        mask = torch.arange(frames.size(1), device=frames.device)[None] < lengths[:, None].to(
            frames.device
        )
        return frames, mask

    def forward(self, features: Tensor, lengths: Tensor, targets: Tensor) -> tuple[Tensor, Tensor]:
        """Teacher forcing: targets (B, U) (each spelling then ``eos``, padded) -> log
        probabilities (B, U, V) of each target given those before it, and weights (B, U, S)."""
        frames, mask = self.listen(features, lengths)
        inputs = torch.cat(
            [torch.full_like(targets[:, :1], self.bos), targets[:, :-1].clamp_min(0)], dim=1
        )  # (B, U): bos, then the previous targets
        logits, weights = [], []
        state = self._start(frames, mask)
        for u in range(targets.size(1)):
            step_logits, state = self._step(inputs[:, u], frames, mask, state)
            logits.append(step_logits)
            weights.append(state[-1])
        return torch.log_softmax(torch.stack(logits, 1), -1), torch.stack(weights, 1)

    def _start(self, frames: Tensor, mask: Tensor):
        """The speller's state before its first step: (h, c, projected keys, context, weights)."""
        b, d = frames.size(0), self.cfg.speller_hidden
        zeros = frames.new_zeros(b, d)
        context = frames.new_zeros(b, frames.size(2))
        return zeros, zeros, self.attention.project_keys(frames), context, first_alignment(mask)

    def _step(self, previous: Tensor, frames: Tensor, mask: Tensor, state):
        """One output: previous outputs (B,) -> logits (B, V) and the next state."""
        h, c, projected, context, weights = state
        h, c = self.cell(torch.cat([self.embed(previous), context], -1), (h, c))  # (B, D)
        context, weights = self.attention(h, frames, projected, weights.to(h.dtype), mask)
        logits = self.out(self.dropout(torch.cat([h, context], -1)))  # (B, V)
        return logits, (h, c, projected, context, weights)

    @torch.no_grad()
    def greedy(self, features: Tensor, lengths: Tensor, max_len: int) -> tuple[Tensor, Tensor]:
        """The most likely output at each step, at most ``max_len`` steps: outputs (B, U) (after
        ``eos``: ``eos``) and weights (B, U, S)."""
        frames, mask = self.listen(features, lengths)
        state = self._start(frames, mask)
        previous = torch.full((frames.size(0),), self.bos, device=frames.device)
        outputs, weights = [], []
        done = torch.zeros_like(previous, dtype=torch.bool)
        for _ in range(max_len):
            logits, state = self._step(previous, frames, mask, state)
            previous = torch.where(done, torch.full_like(previous, self.eos), logits.argmax(-1))
            outputs.append(previous)
            weights.append(state[-1])
            done |= previous == self.eos
            if bool(done.all()):
                break
        return torch.stack(outputs, 1), torch.stack(weights, 1)
