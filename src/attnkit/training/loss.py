"""The training loss: token-level cross entropy, backpropagated with a chosen normaliser."""

from __future__ import annotations

import contextlib

import torch
import torch.nn.functional as F
from torch import nn

from attnkit.data.batching import Batch
from attnkit.data.vocab import PAD_ID


def token_loss_backward(
    model: nn.Module,
    batch: Batch,
    total_tokens: int,
    label_smoothing: float,
    scale: float = 1.0,
    autocast=None,
    scaler: torch.amp.GradScaler | None = None,
) -> tuple[float, int, int]:
    """Forward and backward of ``scale * (summed token loss of batch) / total_tokens``.

    Returns (summed loss, correct target tokens, target tokens) of ``batch``. With
    ``total_tokens = batch.num_target_tokens`` and ``scale = 1`` this is the ordinary
    token-mean cross entropy of one batch; a shard of a larger batch passes the whole
    batch's tokens, so the shards' gradients add up to the whole batch's mean gradient.
    ``autocast``: a context the forward runs in (:mod:`attnkit.training.precision`; the backward
    runs outside it, as torch advises); ``scaler``: fp16's loss scaler, which scales the loss
    before the backward.
    """
    with autocast or contextlib.nullcontext():
        logits, _ = model(batch.src, batch.src_lengths, batch.tgt_in)  # (B, T, V)
    logits = logits.float()  # the loss in float32 whatever the forward's precision
    loss_sum = F.cross_entropy(
        logits.reshape(-1, logits.size(-1)),
        batch.tgt_out.reshape(-1),
        ignore_index=PAD_ID,
        label_smoothing=label_smoothing,
        reduction="sum",
    )
    with torch.no_grad():
        mask = batch.tgt_out != PAD_ID  # (B, T)
        correct = ((logits.argmax(-1) == batch.tgt_out) & mask).sum()
    # the loss keeps the log-probabilities it needs: without the logits, the backward's peak holds
    # one (B, T, V) buffer fewer
    del logits
    loss = loss_sum / total_tokens
    loss = loss if scale == 1.0 else loss * scale
    (loss if scaler is None else scaler.scale(loss)).backward()
    return loss_sum.detach().item(), int(correct), int(mask.sum())
