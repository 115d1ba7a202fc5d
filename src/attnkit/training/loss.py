"""The training loss: token-level cross entropy, backpropagated with a chosen normaliser."""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from attnkit.data.batching import Batch
from attnkit.data.vocab import PAD_ID


def token_loss_backward(
    model: nn.Module, batch: Batch, total_tokens: int, label_smoothing: float, scale: float = 1.0
) -> tuple[float, int, int]:
    """Forward and backward of ``scale * (summed token loss of batch) / total_tokens``.

    Returns (summed loss, correct target tokens, target tokens) of ``batch``. With
    ``total_tokens = batch.num_target_tokens`` and ``scale = 1`` this is the ordinary
    token-mean cross entropy of one batch; a shard of a larger batch passes the whole
    batch's tokens, so the shards' gradients add up to the whole batch's mean gradient.
    """
    logits, _ = model(batch.src, batch.src_lengths, batch.tgt_in)  # (B, T, V)
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
    (loss if scale == 1.0 else loss * scale).backward()
    return loss_sum.detach().item(), int(correct), int(mask.sum())
