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
    """src (B, S), src_lengths (B,) -> B hypotheses, the most likely token at every step.

    Rows that have emitted ``</s>`` leave the batch (state and memory are
    compacted), so a batch costs what its open rows need, not B x max_len.
    """
    memory, state = model.encode(src, src_lengths)
    b, device = src.size(0), src.device
    rows = torch.arange(b, device=device)  # original row of each open row
    prev = torch.full((b,), BOS_ID, dtype=torch.long, device=device)
    scores = torch.zeros(b, device=device)
    tokens = torch.full((b, max_len), EOS_ID, dtype=torch.long, device=device)  # (B, T)
    weights = torch.zeros(b, max_len, src.size(1), device=device)  # (B, T, S)
    finished = torch.zeros(b, dtype=torch.bool, device=device)  # (B,): emitted </s>
    for t in range(max_len):
        logits, state, w = model.decoder.step(prev, state, memory)  # (b_open, V), (b_open, S)
        best_logp, prev = output_log_probs(logits).max(dim=-1)  # (b_open,)
        scores[rows] += best_logp
        tokens[rows, t] = prev
        weights[rows, t] = w.float()
        ended = prev == EOS_ID
        if bool(ended.any()):
            finished[rows[ended]] = True
            open_ = (~ended).nonzero().squeeze(1)
            if open_.numel() == 0:
                tokens = tokens[:, : t + 1]
                weights = weights[:, : t + 1]
                break
            rows, prev = rows[open_], prev[open_]
            state, memory = state.index_select(open_), memory.index_select(open_)
    return _collect(tokens, weights, scores, src_lengths, finished)


def _collect(
    tokens: Tensor, weights: Tensor, scores: Tensor, src_lengths: Tensor, finished: Tensor
) -> list[Hypothesis]:
    """tokens (B, T), weights (B, T, S) -> hypotheses cut at their first </s>."""
    tokens, weights, scores, finished = (
        tokens.cpu(),
        weights.float().cpu(),
        scores.cpu(),
        finished.cpu(),
    )
    out = []
    for i in range(tokens.size(0)):
        row = tokens[i].tolist()
        finished_i = bool(finished[i])
        n = row.index(EOS_ID) if finished_i else len(row)
        rows = n + 1 if finished_i else n
        out.append(
            Hypothesis(
                row[:n], weights[i, :rows, : int(src_lengths[i])], float(scores[i]), finished_i
            )
        )
    return out
