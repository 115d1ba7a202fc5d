"""Tests that replace the attention itself (Jain & Wallace 2019, section 4):

* :func:`permutation_test`: each unit's attention row randomly permuted over the positions,
  ``permutations`` times, the other rows left as they were; the output change is the total
  variation distance (TVD) of the unit's output distribution from the original one. Jain &
  Wallace report its median per example against the attention's peakedness (its largest
  weight): a faithful attention that is peaked should change the output when moved.
* :func:`adversarial_search`: the attention most different from the original (Jensen-Shannon
  divergence, at most ln 2) that changes the unit's output by at most ``epsilon`` (TVD), by
  gradient ascent on the divergence with a hinge penalty on the output change (Adam on the
  logits of the new weights, each unit's row searched at once in one batch); the best feasible
  weights seen are kept.

Both need :meth:`attnkit.evaluation.faithfulness.Subject.predict_with_attention`, which must
let gradients through to the weights.

Shapes: U units, S positions, P permutations, C classes.
"""

from __future__ import annotations

import torch
from torch import Tensor

from attnkit.evaluation.faithfulness_stats import jsd, tvd

#: weight of the hinge penalty on an output change above epsilon
PENALTY = 300.0
#: Adam's learning rate on the logits of the adversarial weights
LR = 0.1


def permutation_test(subject, attention: Tensor, permutations: int = 100, seed: int = 0) -> dict:
    """attention (U, S) -> {"median_tvd": [U], "max_attention": [U], "permutations": P}: the
    median over ``permutations`` random permutations of each unit's attention row of the TVD of
    that unit's output from the original output."""
    from attnkit.evaluation.faithfulness import batched

    u, s = attention.shape
    attention = attention.float()
    with torch.no_grad():
        base = subject.predict_with_attention(attention.unsqueeze(0))[0].float()  # (U, C)
        gen = torch.Generator().manual_seed(seed)
        order = torch.rand(u, permutations, s, generator=gen).argsort(-1)  # (U, P, S)
        permuted = attention.unsqueeze(1).expand(u, permutations, s).gather(2, order)
        weights = attention.view(1, 1, u, s).repeat(u, permutations, 1, 1)  # (U, P, U, S)
        idx = torch.arange(u)
        weights[idx, :, idx] = permuted  # row i of copy i permuted
        probs = batched(subject.predict_with_attention, weights.view(-1, u, s), 256)
        probs = probs.view(u, permutations, u, -1).float()  # (U, P, U, C)
        own = probs[idx, :, idx]  # (U, P, C)
        change = tvd(own, base.unsqueeze(1))  # (U, P)
    return {
        "median_tvd": [round(float(x), 6) for x in change.median(1).values],
        "max_attention": [round(float(x), 6) for x in attention.max(1).values],
        "permutations": permutations,
    }


def adversarial_search(
    subject, attention: Tensor, steps: int = 100, epsilon: float = 0.01, seed: int = 0
) -> dict:
    """attention (U, S) -> {"max_jsd": [U], "output_tvd": [U], "epsilon", "steps"}: for each
    unit the largest JSD from its attention found with the unit's output changed by at most
    ``epsilon`` (TVD), and that output change."""
    u, s = attention.shape
    attention = attention.float().detach()
    with torch.no_grad():
        base = subject.predict_with_attention(attention.unsqueeze(0))[0].float()  # (U, C)
    gen = torch.Generator().manual_seed(seed)
    noise = torch.randn(u, s, generator=gen)
    logits = (attention.clamp_min(1e-6).log() + noise).requires_grad_(True)
    optimizer = torch.optim.Adam([logits], lr=LR)
    eye = torch.eye(u).unsqueeze(-1)  # (U, U, 1)
    idx = torch.arange(u)
    best = torch.zeros(u)
    best_change = torch.zeros(u)
    for _ in range(steps):
        alt = torch.softmax(logits, -1)  # (U, S)
        # copy i has unit i's row replaced, the others as they were
        weights = attention.unsqueeze(0) * (1 - eye) + alt.unsqueeze(1) * eye  # (U, U, S)
        with torch.enable_grad():
            own = subject.predict_with_attention(weights).float()[idx, idx]  # (U, C)
            change = tvd(own, base)  # (U,)
            divergence = jsd(alt, attention)  # (U,)
            loss = (-divergence + PENALTY * torch.relu(change - epsilon)).sum()
        with torch.no_grad():
            better = (change <= epsilon) & (divergence > best)
            best = torch.where(better, divergence.detach(), best)
            best_change = torch.where(better, change.detach(), best_change)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    return {
        "max_jsd": [round(float(x), 6) for x in best],
        "output_tvd": [round(float(x), 6) for x in best_change],
        "epsilon": epsilon,
        "steps": steps,
    }


def seed_variance(maps: list[list[Tensor]]) -> dict:
    """Attention of the same examples under several seeds (Wiegreffe & Pinter 2019): ``maps``
    one list per seed of (U, S) maps (same examples, same order) -> {"mean_jsd", "max_jsd",
    "pairs"}: the JSD of each unit's rows between every pair of seeds, averaged."""
    values = []
    for i in range(len(maps)):
        for j in range(i + 1, len(maps)):
            for a, b in zip(maps[i], maps[j]):
                values.append(jsd(a.float(), b.float()))
    if not values:
        return {"mean_jsd": None, "max_jsd": None, "pairs": 0}
    flat = torch.cat([v.reshape(-1) for v in values])
    return {
        "mean_jsd": round(float(flat.mean()), 6),
        "max_jsd": round(float(flat.max()), 6),
        "pairs": len(maps) * (len(maps) - 1) // 2,
    }
