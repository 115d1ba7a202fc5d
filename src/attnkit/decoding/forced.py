"""Forced decoding: step the decoder through given target tokens instead of its own choices.

It gives the attention a model pays while it writes the *reference* (teacher forcing at
inference time), and the log-probability it gives that reference. Alignment scores use it, so
every test example is scored, not only those the model gets right.
"""

from __future__ import annotations

import torch
from torch import Tensor

from attnkit.data.vocab import BOS_ID, EOS_ID
from attnkit.decoding.greedy import Hypothesis, output_log_probs, split_weights, switch_of


@torch.inference_mode()
def forced_decode(
    model, src: Tensor, src_lengths: Tensor, targets: list[list[int]], keep_heads: bool = False
) -> list[Hypothesis]:
    """src (B, S), src_lengths (B,), targets: B lists of target ids (no ``</s>``) -> B finished
    hypotheses holding those tokens, their attention (len + 1, S) with the ``</s>`` step, and
    their total log-probability under the model.

    Works with anything that has ``encode`` and ``decoder.step`` (a model or an ensemble); rows
    shorter than the longest target step on with ``</s>`` and are cut back afterwards.
    ``keep_heads``: keep every layer's and head's weights (len + 1, L, H, S) where the model has
    them.
    """
    if len(targets) != src.size(0):
        raise ValueError(f"{len(targets)} targets for a batch of {src.size(0)} sources")
    memory, state = model.encode(src, src_lengths)
    b, device = src.size(0), src.device
    steps = max(len(t) for t in targets) + 1
    forced = torch.full((b, steps), EOS_ID, dtype=torch.long)
    for row, target in enumerate(targets):
        forced[row, : len(target)] = torch.tensor(target, dtype=torch.long)
    forced = forced.to(device)  # (B, T): the tokens to emit, </s> after each target
    prev = torch.full((b,), BOS_ID, dtype=torch.long, device=device)
    logp = torch.zeros(b, steps, device=device)  # (B, T)
    weights = torch.zeros(b, steps, src.size(1), device=device)  # (B, T, S)
    heads = []  # per step (B, L, H, S), where the model has them and they are kept
    switch = []  # per step (B,): a copying decoder's p_gen
    for t in range(steps):
        logits, state, w = model.decoder.step(prev, state, memory)  # (B, V), (B, ..., S)
        prev = forced[:, t]
        logp[:, t] = output_log_probs(logits).gather(1, prev.unsqueeze(1)).squeeze(1)
        w, w_heads = split_weights(w)
        weights[:, t] = w.float()
        if switch_of(state) is not None:
            switch.append(switch_of(state).float())
        if keep_heads and w_heads is not None:
            heads.append(w_heads.float())
    stacked = torch.stack(heads, 1).cpu() if heads else None  # (B, T, L, H, S): one copy
    switches = torch.stack(switch, 1).cpu() if switch else None  # (B, T)
    out = []
    for row, target in enumerate(targets):
        n, s = len(target) + 1, int(src_lengths[row])
        score = float(logp[row, :n].sum())
        row_heads = None if stacked is None else stacked[row, :n, ..., :s]
        hyp = Hypothesis(list(target), weights[row, :n, :s].cpu(), score, True, row_heads)
        hyp.p_gen = None if switches is None else switches[row, :n]
        out.append(hyp)
    return out
