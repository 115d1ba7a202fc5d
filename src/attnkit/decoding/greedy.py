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
    score: total log-probability; finished: whether ``</s>`` was emitted;
    heads: (len(tokens) + 1, L, H, S) every layer's and head's attention, for models that have
    them (the Transformer) when the decoder was asked to keep them, else None;
    top: the k most likely tokens at every step, (probabilities (len(tokens) + 1, k), ids
    (len(tokens) + 1, k)) best first, when the search was asked for them, else None;
    p_gen: (len(tokens) + 1,) a copying decoder's switch at every step (1: write from the
    vocabulary, 0: copy from the source; :mod:`attnkit.models.copy`), else None.
    """

    tokens: list[int]
    weights: Tensor
    score: float
    finished: bool = True
    heads: Tensor | None = None
    top: tuple[Tensor, Tensor] | None = None
    p_gen: Tensor | None = None


def switch_of(state) -> Tensor | None:
    """The p_gen (B,) of the step that made a decoder ``state``: a copying decoder's
    (:mod:`attnkit.models.copy`); None for the others, whose states (a Transformer's, an
    ensemble's) need not have the field."""
    return getattr(state, "p_gen", None)


def split_weights(w: Tensor) -> tuple[Tensor, Tensor | None]:
    """A decoder step's weights -> (the map shown by default (N, S), every layer's and head's
    (N, L, H, S) or None).

    An RNN decoder's step gives (N, S). A Transformer's gives (N, L, H, S); its default map is
    the mean over layers and heads (one chosen layer or head is the pictures' affair).
    """
    if w.dim() == 2:
        return w, None
    return w.mean(dim=(1, 2)), w


def max_output_length(src_lengths: Tensor, ratio: float, extra: int, cap: int) -> Tensor:
    """Each input's output length limit (B,): ratio * its source length + extra, between 1 and
    cap. One per row, so that an output never depends on the inputs it was batched with."""
    limits = (ratio * src_lengths.float()).long() + extra
    return limits.clamp(1, cap).to(src_lengths.device)


def target_position_limit(model) -> int | None:
    """The most target positions ``model`` has, the least of an ensemble's members (a
    Transformer's learned table: decoding stops at its end); None where any length has them."""
    members = getattr(model, "members", [model])
    limits = [n for n in (getattr(m, "position_limit", None) for m in members) if n is not None]
    return min(limits) if limits else None


def row_limits(max_len: int | Tensor, b: int, device: torch.device) -> Tensor:
    """``max_len`` (one limit, or one per row) as a (B,) tensor of limits on ``device``."""
    return torch.as_tensor(max_len, device=device).long().expand(b).clamp_min(1)


@torch.inference_mode()
def greedy_decode(
    model,
    src: Tensor,
    src_lengths: Tensor,
    max_len: int | Tensor,
    keep_heads: bool = False,
    top_k: int = 0,
) -> list[Hypothesis]:
    """src (B, S), src_lengths (B,) -> B hypotheses, the most likely token at every step, at most
    ``max_len`` of them (one limit, or one per row (B,)).

    Rows that have emitted ``</s>`` or reached their limit leave the batch (state and memory are
    compacted), so a batch costs what its open rows need, not B x max_len.
    ``keep_heads``: keep every layer's and head's weights where the model has them;
    ``top_k`` > 0: keep the k most likely tokens of every step (``Hypothesis.top``: what an
    explorer shows beside each choice, at no extra decoding).
    """
    memory, state = model.encode(src, src_lengths)
    b, device = src.size(0), src.device
    limits = row_limits(max_len, b, device)  # (B,)
    steps = int(limits.max())
    rows = torch.arange(b, device=device)  # original row of each open row
    prev = torch.full((b,), BOS_ID, dtype=torch.long, device=device)
    scores = torch.zeros(b, device=device)
    tokens = torch.full((b, steps), EOS_ID, dtype=torch.long, device=device)  # (B, T)
    weights = torch.zeros(b, steps, src.size(1), device=device)  # (B, T, S)
    finished = torch.zeros(b, dtype=torch.bool, device=device)  # (B,): emitted </s>
    heads = None  # (B, T, L, H, S), allocated at the first step that has them
    switch = None  # (B, T): a copying decoder's p_gen, allocated at its first step
    top = None  # (probabilities (B, T, k), ids (B, T, k)), allocated at the first step
    for t in range(steps):
        logits, state, w = model.decoder.step(prev, state, memory)  # (b_open, V), (b_open, ..., S)
        logp = output_log_probs(logits)  # (b_open, V)
        best_logp, prev = logp.max(dim=-1)  # (b_open,)
        if top_k:
            top = _keep_top(top, logp, rows, t, top_k, (b, steps))
        scores[rows] += best_logp
        tokens[rows, t] = prev
        w, w_heads = split_weights(w)
        weights[rows, t] = w.float()
        p_gen = switch_of(state)
        if p_gen is not None:
            switch = weights.new_zeros(b, steps) if switch is None else switch
            switch[rows, t] = p_gen.float()
        if keep_heads and w_heads is not None:
            if heads is None:
                heads = weights.new_zeros(b, steps, *w_heads.shape[1:])
            heads[rows, t] = w_heads.float()
        ended = prev == EOS_ID
        leaving = ended | (limits[rows] <= t + 1)  # ended, or at the row's own limit
        if bool(leaving.any()):
            finished[rows[ended]] = True
            open_ = (~leaving).nonzero().squeeze(1)
            if open_.numel() == 0:
                tokens = tokens[:, : t + 1]
                weights = weights[:, : t + 1]
                heads = None if heads is None else heads[:, : t + 1]
                break
            rows, prev = rows[open_], prev[open_]
            state, memory = state.index_select(open_), memory.index_select(open_)
    hyps = _collect(tokens, weights, scores, src_lengths, finished, heads, limits)
    if switch is not None:
        for i, hyp in enumerate(hyps):
            hyp.p_gen = switch[i, : hyp.weights.size(0)].cpu()
    if top is not None:
        probs, ids = top[0].cpu(), top[1].cpu()
        for i, hyp in enumerate(hyps):
            n = hyp.weights.size(0)  # its steps, </s> included
            hyp.top = (probs[i, :n], ids[i, :n])
    return hyps


def _keep_top(top, logp: Tensor, rows: Tensor, t: int, k: int, shape: tuple[int, int]):
    """Store step ``t``'s k most likely tokens of the open ``rows`` (never-emitted tokens,
    probability 0, are left out: at most V - 2 are shown)."""
    k = min(k, logp.size(-1) - len(NEVER_EMITTED))
    if top is None:
        top = (
            logp.new_zeros(*shape, k),
            torch.zeros(*shape, k, dtype=torch.long, device=logp.device),
        )
    p, i = logp.topk(k, dim=-1)  # (b_open, k)
    top[0][rows, t] = p.exp()
    top[1][rows, t] = i
    return top


def _collect(
    tokens: Tensor,
    weights: Tensor,
    scores: Tensor,
    src_lengths: Tensor,
    finished: Tensor,
    heads: Tensor | None = None,
    limits: Tensor | None = None,
) -> list[Hypothesis]:
    """tokens (B, T), weights (B, T, S), heads (B, T, L, H, S) or None -> hypotheses cut at their
    first </s>, or at their row's limit (B,) when they never emitted it."""
    tokens, weights, scores, finished = (
        tokens.cpu(),
        weights.float().cpu(),
        scores.cpu(),
        finished.cpu(),
    )
    heads = None if heads is None else heads.cpu()
    cut = [tokens.size(1)] * tokens.size(0) if limits is None else limits.tolist()
    out = []
    for i in range(tokens.size(0)):
        row = tokens[i].tolist()
        finished_i = bool(finished[i])
        n = row.index(EOS_ID) if finished_i else min(cut[i], len(row))
        rows = n + 1 if finished_i else n
        s = int(src_lengths[i])
        out.append(
            Hypothesis(
                row[:n],
                weights[i, :rows, :s],
                float(scores[i]),
                finished_i,
                None if heads is None else heads[i, :rows, ..., :s],
            )
        )
    return out
