"""Batched greedy decoding."""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor

from attnkit.data.vocab import BOS_ID, EOS_ID, PAD_ID

NEVER_EMITTED = (PAD_ID, BOS_ID)


def output_log_probs(logits: Tensor) -> Tensor:
    """(N, V) logits -> log-probabilities with <pad> and <s> ruled out as outputs.

    They are masked after the softmax, so the scores stay the model's own log-probabilities.
    """
    logp = torch.log_softmax(logits.float(), dim=-1)
    logp[:, list(NEVER_EMITTED)] = float("-inf")
    return logp


@dataclass
class Hypothesis:
    """One decoded output.

    tokens: target ids without ``</s>``; weights: (len(tokens) + 1, S) attention
    of every emitted token, ``</s>`` included, over the S true source tokens;
    score: total log-probability; finished: whether ``</s>`` was emitted.
    """

    tokens: list[int]
    weights: Tensor
    score: float
    finished: bool = True


def max_output_length(src_lengths: Tensor, ratio: float, extra: int, cap: int) -> int:
    """One output length limit for a batch: ratio * longest source + extra, at most cap."""
    return max(1, min(cap, int(ratio * int(src_lengths.max()) + extra)))


@torch.inference_mode()
def greedy_decode(model, src: Tensor, src_lengths: Tensor, max_len: int) -> list[Hypothesis]:
    """src (B, S), src_lengths (B,) -> B hypotheses, the most likely token at every step."""
    memory, state = model.encode(src, src_lengths)
    b = src.size(0)
    prev = torch.full((b,), BOS_ID, dtype=torch.long, device=src.device)
    done = torch.zeros(b, dtype=torch.bool, device=src.device)
    scores = torch.zeros(b, device=src.device)
    tokens, weights = [], []
    for _ in range(max_len):
        logits, state, w = model.decoder.step(prev, state, memory)  # (B, V), (B, S)
        logp = output_log_probs(logits)
        best_logp, prev = logp.max(dim=-1)  # (B,)
        scores += best_logp.masked_fill(done, 0.0)
        tokens.append(prev)
        weights.append(w)
        done |= prev == EOS_ID
        if bool(done.all()):
            break
    return _collect(torch.stack(tokens, 1), torch.stack(weights, 1), scores, src_lengths)


def _collect(tokens: Tensor, weights: Tensor, scores: Tensor, src_lengths: Tensor) -> list[Hypothesis]:
    """tokens (B, T), weights (B, T, S) -> hypotheses cut at their first </s>."""
    tokens, weights, scores = tokens.cpu(), weights.float().cpu(), scores.cpu()
    out = []
    for i in range(tokens.size(0)):
        row = tokens[i].tolist()
        finished = EOS_ID in row
        n = row.index(EOS_ID) if finished else len(row)
        rows = n + 1 if finished else n
        out.append(Hypothesis(row[:n], weights[i, :rows, : int(src_lengths[i])], float(scores[i]), finished))
    return out
