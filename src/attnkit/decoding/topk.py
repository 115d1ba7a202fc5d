"""The model's k most likely tokens at every step of given outputs.

One teacher-forced pass over each output (as :mod:`attnkit.decoding.forced`): at step t the
decoder has read ``<s>`` and the output's first t tokens, and its distribution over the next
token is what an explorer shows beside the token that was chosen.
"""

from __future__ import annotations

import torch
from torch import Tensor

from attnkit.data.vocab import BOS_ID, EOS_ID
from attnkit.decoding.greedy import NEVER_EMITTED, output_log_probs


@torch.inference_mode()
def step_top_k(
    model, src: Tensor, src_lengths: Tensor, targets: list[list[int]], k: int
) -> list[tuple[Tensor, Tensor]]:
    """src (B, S), src_lengths (B,), targets: B lists of output ids (no ``</s>``) -> B pairs
    (probabilities (len + 1, k), token ids (len + 1, k)), best first: one row per output step,
    the ``</s>`` step last. ``<pad>`` and ``<s>`` are never among them (they are never emitted),
    so a row sums to at most 1."""
    if len(targets) != src.size(0):
        raise ValueError(f"{len(targets)} targets for a batch of {src.size(0)} sources")
    memory, state = model.encode(src, src_lengths)
    b, device = src.size(0), src.device
    steps = max(len(t) for t in targets) + 1
    forced = torch.full((b, steps), EOS_ID, dtype=torch.long)
    for row, target in enumerate(targets):
        forced[row, : len(target)] = torch.tensor(target, dtype=torch.long)
    forced = forced.to(device)  # (B, T)
    prev = torch.full((b,), BOS_ID, dtype=torch.long, device=device)
    probs, ids = [], []
    for t in range(steps):
        logits, state, _ = model.decoder.step(prev, state, memory)  # (B, V)
        shown = min(k, logits.size(-1) - len(NEVER_EMITTED))  # never-emitted tokens: p = 0
        p, i = output_log_probs(logits).exp().topk(shown, dim=-1)  # (B, k)
        probs.append(p)
        ids.append(i)
        prev = forced[:, t]
    probs_t, ids_t = torch.stack(probs, 1).cpu(), torch.stack(ids, 1).cpu()  # (B, T, k)
    return [
        (probs_t[row, : len(target) + 1], ids_t[row, : len(target) + 1])
        for row, target in enumerate(targets)
    ]
