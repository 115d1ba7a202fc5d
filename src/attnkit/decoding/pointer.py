"""Greedy and beam-search decoding of a pointer network
(:class:`attnkit.models.pointer.PointerNet`).

Both step until every row has pointed at the end slot (at most n + 1 steps: the mask allows each
input once). Each returns, per instance, the chosen inputs (0-based, the end left out), the
attention of every step (T, S) (slot 0: end) and the sequence's log-probability.

Shapes: B batch, K beam, n inputs, S = n + 1 slots, T steps, H hidden.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch
from torch import Tensor

from attnkit.models.pointer import END, PointerNet


@dataclass
class Pointed:
    """One decoded instance: ``order`` (inputs, 0-based), ``attention`` (T, S) with the end
    slot first, ``log_prob`` of the whole output."""

    order: list[int]
    attention: np.ndarray
    log_prob: float


@torch.no_grad()
def greedy_pointer(model: PointerNet, inputs: Tensor) -> list[Pointed]:
    """inputs (B, n, d) -> the most probable slot at every step."""
    memory, state, embedded = model.encode(inputs)
    b, n = inputs.shape[:2]
    rows = torch.arange(b, device=inputs.device)
    prev, steps, chosen_all, total = embedded[:, 0], [], [], torch.zeros(b, device=inputs.device)
    for _ in range(n + 1):
        log_probs, state = model.step(prev, state, memory)
        slot = log_probs.argmax(-1)  # (B,)
        total += torch.where(state.ended, 0.0, log_probs[rows, slot])
        steps.append(log_probs.exp())
        chosen_all.append(torch.where(state.ended, -1, slot))
        state = model.choose(state, slot)
        prev = embedded[rows, slot]
        if bool(state.ended.all()):
            break
    weights = torch.stack(steps, 1).cpu().numpy()  # (B, T, S)
    picks = torch.stack(chosen_all, 1).cpu().numpy()  # (B, T), -1 after the end
    return [_pointed(picks[i], weights[i], float(total[i])) for i in range(b)]


def _pointed(picks: np.ndarray, weights: np.ndarray, log_prob: float) -> Pointed:
    """The order before the end slot and the attention of the steps up to it."""
    order, steps = [], 0
    for slot in picks:
        if slot < 0:
            break
        steps += 1
        if slot == END:
            break
        order.append(int(slot) - 1)
    return Pointed(order, weights[:steps], log_prob)


@torch.no_grad()
def beam_pointer(model: PointerNet, inputs: Tensor, beam: int) -> list[Pointed]:
    """Beam search of width ``beam`` per instance (rows B * K); the best finished hypothesis by
    total log-probability (no length penalty: a permutation's length is fixed)."""
    if beam <= 1:
        return greedy_pointer(model, inputs)
    b, n = inputs.shape[:2]
    memory, state, embedded = model.encode(inputs)
    expand = torch.arange(b, device=inputs.device).repeat_interleave(beam)  # (B*K,)
    memory, state, embedded = (
        memory.index_select(expand),
        state.index_select(expand),
        embedded[expand],
    )
    score = torch.full((b, beam), float("-inf"), device=inputs.device)
    score[:, 0] = 0.0  # one live hypothesis per instance at first
    score = score.view(-1)
    rows = torch.arange(b * beam, device=inputs.device)
    prev = embedded[:, 0]
    picks = torch.empty(b * beam, 0, dtype=torch.long, device=inputs.device)
    attention = torch.empty(b * beam, 0, n + 1, device=inputs.device)
    for _ in range(n + 1):
        log_probs, state = model.step(prev, state, memory)  # (B*K, S)
        # an ended hypothesis continues with one zero-cost option only
        log_probs = torch.where(
            state.ended[:, None],
            torch.where(torch.arange(n + 1, device=inputs.device) == END, 0.0, float("-inf")),
            log_probs,
        )
        total = (score[:, None] + log_probs).view(b, beam * (n + 1))
        score, flat = total.topk(beam, dim=1)  # (B, K)
        parent = (flat // (n + 1) + torch.arange(b, device=inputs.device)[:, None] * beam).view(-1)
        slot = (flat % (n + 1)).view(-1)
        score = score.view(-1)
        state = state.index_select(parent)
        was_ended = state.ended
        picks = torch.cat([picks[parent], torch.where(was_ended, -1, slot)[:, None]], 1)
        attention = torch.cat([attention[parent], log_probs[parent].exp()[:, None]], 1)
        state = model.choose(state, slot)
        prev = embedded[rows, slot]
        if bool(state.ended.all()):
            break
    best = score.view(b, beam).argmax(1) + torch.arange(b, device=inputs.device) * beam
    picks_np, att_np = picks[best].cpu().numpy(), attention[best].cpu().numpy()
    scores = score[best].tolist()
    return [_pointed(picks_np[i], att_np[i], scores[i]) for i in range(b)]
