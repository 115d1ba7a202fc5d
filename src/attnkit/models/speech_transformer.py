"""The Transformer over frames: a speech recogniser built from attnkit's Transformer layers.

* **Front end** (:class:`FrameEncoder`): two Conv1d layers of stride 2 over the log-mel frames
  (kernel 3, padding 1, ReLU) subsample them by 4 -- self-attention over every 10 ms frame
  would cost 16 times as much and see little more -- then sinusoidal positions and
  :class:`~attnkit.models.transformer.EncoderLayer` s (self-attention over the subsampled
  frames, padded frames masked), and a LayerNorm.
* **Decoder**: :class:`~attnkit.models.transformer.TransformerDecoder` (causal self-attention
  over the digits so far, cross-attention over the encoded frames), decoding greedily one digit
  at a time from its cache.

It speaks the interface of :class:`~attnkit.models.las.LAS` (``forward`` teacher-forced,
``greedy``, ``listener.stride``), so the speech family trains, scores, draws and serves it
unchanged. The weights it returns are the last decoder layer's cross-attention, averaged over
its heads: (B, U, S), one row per output over the subsampled frames.

Shapes: B batch, T feature frames, F mel bands, S subsampled frames (ceil(T / 4)), U output
steps, V outputs, D model width.
"""

from __future__ import annotations

import math

import torch
from torch import Tensor, nn

from attnkit.models.las import LASConfig
from attnkit.models.positions import SinusoidalPositions
from attnkit.models.transformer import (
    EncoderLayer,
    TransformerDecoder,
    TransformerMemory,
)
from attnkit.models.transformer_config import TransformerConfig

STRIDE = 4  # feature frames per encoded frame: two convolutions of stride 2


def layers_config(cfg: LASConfig) -> TransformerConfig:
    """The :class:`TransformerConfig` the shared layers read, from a speech ``model:``."""
    return TransformerConfig(
        embedding_dim=cfg.model_dim,
        encoder_layers=cfg.encoder_layers,
        decoder_layers=cfg.decoder_layers,
        heads=cfg.heads,
        ff_dim=cfg.ff_dim,
        dropout=cfg.dropout,
    )


class FrameEncoder(nn.Module):
    """Features (B, T, F) with lengths (B,) -> encoded frames (B, S, D) and their lengths (B,).

    Each convolution (kernel 3, stride 2, padding 1) keeps ceil(n / 2) of n frames. Zero
    padding of a batch is what the convolutions' own padding adds at an utterance's end (and
    the first one's output is zeroed past it), so an utterance encodes to the same frames alone
    or padded in a batch."""

    stride = STRIDE

    def __init__(self, n_mels: int, cfg: LASConfig):
        super().__init__()
        d = cfg.model_dim
        self.convs = nn.ModuleList(
            [nn.Conv1d(n_mels, d, 3, stride=2, padding=1), nn.Conv1d(d, d, 3, stride=2, padding=1)]
        )
        self.scale = math.sqrt(d)
        self.positions = SinusoidalPositions(d, 0)
        self.dropout = nn.Dropout(cfg.dropout)
        shared = layers_config(cfg)
        self.layers = nn.ModuleList(EncoderLayer(shared, i) for i in range(cfg.encoder_layers))
        self.norm = nn.LayerNorm(d)

    def forward(self, features: Tensor, lengths: Tensor) -> tuple[Tensor, Tensor]:
        lengths = lengths.to(features.device)
        x = features.transpose(1, 2)  # (B, F, T)
        for conv in self.convs:
            lengths = (lengths + 1) // 2
            x = torch.relu(conv(x))  # (B, D, ceil(T / 2))
            # past an utterance's end, zeros, as the convolution's padding: else ReLU(bias)
            # there would leak into its last frame at the next layer
            keep = torch.arange(x.size(2), device=x.device)[None] < lengths[:, None]
            x = x * keep[:, None]
        x = x.transpose(1, 2)  # (B, S, D)
        # scaled as the token embeddings are, so the positions do not drown the frames
        x = self.dropout(x * self.scale + self.positions(0, x.size(1)))
        mask = torch.arange(x.size(1), device=x.device)[None] < lengths[:, None]  # (B, S)
        for layer in self.layers:
            # explicit attention (fast=False): the padded batch and the lone utterance agree
            x = layer(x, mask, False)
        return self.norm(x), lengths


class SpeechTransformer(nn.Module):
    """The Transformer over ``n_mels`` feature frames, spelling ``vocab_size`` outputs (``bos``
    starts a spelling, an output of ``eos`` ends it)."""

    def __init__(self, cfg: LASConfig, n_mels: int, vocab_size: int, bos: int, eos: int):
        super().__init__()
        self.cfg, self.bos, self.eos = cfg, bos, eos
        self.listener = FrameEncoder(n_mels, cfg)
        self.decoder = TransformerDecoder(layers_config(cfg), vocab_size)
        self.decoder.fast = False  # the weights are read at every step: computed explicitly
        # the shared Embeddings zero attnkit's text padding id, which is ``bos`` here: give the
        # row back to training (the speech targets pad with -1, never an id)
        self.decoder.embeddings.embed.padding_idx = None
        nn.init.normal_(self.decoder.embeddings.embed.weight, std=cfg.model_dim**-0.5)

    def encode(self, features: Tensor, lengths: Tensor) -> TransformerMemory:
        """Features (B, T, F), lengths (B,) -> the memory the decoder attends to (states
        (B, S, D), every layer's cross keys and values, mask (B, S))."""
        states, frames = self.listener(features, lengths)
        mask = torch.arange(states.size(1), device=states.device)[None] < frames[:, None]
        return TransformerMemory(states, self.decoder.project_memory(states), mask)

    def forward(self, features: Tensor, lengths: Tensor, targets: Tensor) -> tuple[Tensor, Tensor]:
        """Teacher forcing: targets (B, U) (each spelling then ``eos``, padded with negative
        ids) -> log probabilities (B, U, V) of each target given those before it, and the last
        layer's cross-attention averaged over heads (B, U, S)."""
        memory = self.encode(features, lengths)
        inputs = torch.cat(
            [torch.full_like(targets[:, :1], self.bos), targets[:, :-1].clamp_min(0)], dim=1
        )  # (B, U): bos, then the previous targets
        logits, weights = self.decoder(inputs, memory, need_weights=True)  # (B, L, H, U, S)
        return torch.log_softmax(logits, -1), weights[:, -1].mean(1)

    @torch.no_grad()
    def greedy(self, features: Tensor, lengths: Tensor, max_len: int) -> tuple[Tensor, Tensor]:
        """The most likely output at each step, at most ``max_len`` steps: outputs (B, U) (after
        ``eos``: ``eos``) and the last layer's cross-attention averaged over heads (B, U, S)."""
        memory = self.encode(features, lengths)
        state = self.decoder.empty_state(memory)
        previous = torch.full((features.size(0),), self.bos, device=features.device)
        outputs, weights = [], []
        done = torch.zeros_like(previous, dtype=torch.bool)
        for _ in range(max_len):
            logits, state, w = self.decoder.step(previous, state, memory)  # w (B, L, H, S)
            previous = torch.where(done, torch.full_like(previous, self.eos), logits.argmax(-1))
            outputs.append(previous)
            weights.append(w[:, -1].mean(1))
            done |= previous == self.eos
            if bool(done.all()):
                break
        return torch.stack(outputs, 1), torch.stack(weights, 1)
