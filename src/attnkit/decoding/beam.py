"""Batched beam search over B*K rows.

All K beams of all B inputs advance in one decoder call per step. Beams that
have emitted ``</s>`` stay in the beam with a frozen score and length, so they
keep competing with the open ones; candidates are ranked by the length-
normalised score log p / lp(len), lp = ((5 + len) / 6) ** alpha (Wu et al.
2016). An input is done once its ``n_best`` best-ranked beams have ended (the
rule JoeyNMT and OpenNMT use), and then leaves the batch, so the remaining
steps cost only what the open inputs need. Beam size 1 is greedy decoding.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor

from attnkit.data.vocab import BOS_ID, EOS_ID, PAD_ID
from attnkit.decoding.greedy import (
    NEVER_EMITTED,
    Hypothesis,
    output_log_probs,
    row_limits,
    split_weights,
    switch_of,
)


def length_penalty(length: Tensor, alpha: float) -> Tensor:
    return ((5.0 + length.float()) / 6.0) ** alpha


@dataclass
class _Histories:
    """What every beam row has emitted so far: tokens (B*K, t), attention (B*K, t, S) and, when
    kept, every layer's and head's attention (B*K, t, L, H, S) and the k most likely tokens of
    every step (probabilities and ids, each (B*K, t, k)), and a copying decoder's p_gen of every
    step (B*K, t)."""

    tokens: Tensor
    attn: Tensor
    heads: Tensor | None = None
    top: tuple[Tensor, Tensor] | None = None
    switch: Tensor | None = None

    def extend(
        self, order: Tensor, token: Tensor, w: Tensor, keep_heads: bool, top=None, p_gen=None
    ) -> _Histories:
        """The rows ``order`` continue, each with its new token (B*K,), the weights of the
        step that chose it (B*K, S) or (B*K, L, H, S), and that step's top-k ``top``
        (probabilities and ids of every row before reordering, each (B*K, k)) when kept, and
        its p_gen (B*K,) of the rows already in ``order`` (a copying decoder's)."""
        w, w_heads = split_weights(w)
        tokens = torch.cat([self.tokens.index_select(0, order), token.view(-1, 1)], 1)
        attn = torch.cat([self.attn.index_select(0, order), w.index_select(0, order)[:, None]], 1)
        heads = None
        if keep_heads and w_heads is not None:
            new = w_heads.index_select(0, order).unsqueeze(1).float()
            heads = new if self.heads is None else torch.cat([self.heads[order], new], 1)
        kept = None
        if top is not None:
            new_p, new_i = (x.index_select(0, order).unsqueeze(1) for x in top)  # (B*K, 1, k)
            kept = (
                (new_p, new_i)
                if self.top is None
                else (
                    torch.cat([self.top[0][order], new_p], 1),
                    torch.cat([self.top[1][order], new_i], 1),
                )
            )
        switch = None
        if p_gen is not None:
            new = p_gen.float().unsqueeze(1)  # (B*K, 1)
            switch = new if self.switch is None else torch.cat([self.switch[order], new], 1)
        return _Histories(tokens, attn, heads, kept, switch)

    def rows(self, rows: Tensor) -> _Histories:
        return _Histories(
            self.tokens[rows],
            self.attn[rows],
            None if self.heads is None else self.heads[rows],
            None if self.top is None else (self.top[0][rows], self.top[1][rows]),
            None if self.switch is None else self.switch[rows],
        )


@torch.inference_mode()
def beam_search(
    model,
    src: Tensor,
    src_lengths: Tensor,
    max_len: int | Tensor,
    beam_size: int = 5,
    alpha: float = 1.0,
    n_best: int = 1,
    keep_heads: bool = False,
    top_k: int = 0,
) -> list[list[Hypothesis]]:
    """src (B, S) -> for each input its ``n_best`` hypotheses, best first, of at most ``max_len``
    tokens (one limit, or one per input (B,)); ``keep_heads``: with every layer's and head's
    weights where the model has them; ``top_k`` > 0: with the k most likely tokens of every step
    of each hypothesis (``Hypothesis.top``), read from the distributions the search computed."""
    if not 1 <= n_best <= beam_size:
        raise ValueError(f"n_best ({n_best}) must be between 1 and the beam size ({beam_size})")
    b, k, device = src.size(0), beam_size, src.device
    memory, state = model.encode(src, src_lengths)
    rows = torch.arange(b, device=device).repeat_interleave(k)  # (B*K,) which input each beam reads
    memory, state = (
        memory.index_select(rows),
        state.index_select(rows),
    )  # memory never needs reordering again

    scores = torch.full((b, k), float("-inf"), device=device)
    scores[:, 0] = 0.0  # one live beam at the start, so the first step does not pick K copies
    lengths = torch.zeros(b, k, dtype=torch.long, device=device)
    finished = torch.zeros(b, k, dtype=torch.bool, device=device)
    prev = torch.full((b * k,), BOS_ID, dtype=torch.long, device=device)
    history = _Histories(
        torch.empty(b * k, 0, dtype=torch.long, device=device),  # (B*K, t)
        torch.empty(b * k, 0, src.size(1), device=device),  # (B*K, t, S)
    )
    base = (torch.arange(b, device=device) * k).unsqueeze(1)  # (B, 1)

    src_lengths = src_lengths.cpu()
    inputs = torch.arange(b)  # original index of each open input
    results: list[list[Hypothesis] | None] = [None] * b
    limits = row_limits(max_len, b, torch.device("cpu"))  # (B,) by original input
    for t in range(int(limits.max())):
        logits, state, w = model.decoder.step(prev, state, memory)  # (B*K, V), (B*K, S)
        logp = output_log_probs(logits).view(b, k, -1)  # (B, K, V)
        beam, token, scores, lengths, finished = _best_continuations(
            logp, scores, lengths, finished, alpha
        )

        order = (base + beam).view(-1)  # (B*K,) rows to continue from
        state = state.index_select(order)
        top = _step_top(logp.view(b * k, -1), top_k) if top_k else None
        history = history.extend(order, token, w, keep_heads, top, switch_of(state))
        prev = token.view(-1)

        done = finished[:, :n_best].all(dim=1)  # (B,) beams are sorted best-first
        done |= (limits[inputs] <= t + 1).to(device)  # inputs at their own length limit
        if bool(done.any()):
            _collect(
                results,
                inputs,
                done,
                history,
                scores,
                lengths,
                finished,
                src_lengths,
                alpha,
                k,
                n_best,
            )
            keep = (~done).nonzero().squeeze(1)
            if keep.numel() == 0:
                break
            rows = (keep.unsqueeze(1) * k + torch.arange(k, device=device)).view(-1)  # (B'*K,)
            inputs = inputs[keep.cpu()]
            scores, lengths, finished = scores[keep], lengths[keep], finished[keep]
            prev, history = prev[rows], history.rows(rows)
            state, memory = state.index_select(rows), memory.index_select(rows)
            b = keep.numel()
            base = (torch.arange(b, device=device) * k).unsqueeze(1)
    return results  # type: ignore[return-value]


def _step_top(logp: Tensor, k: int) -> tuple[Tensor, Tensor]:
    """Probabilities and ids (each (B*K, k)) of every row's k most likely next tokens; the
    never-emitted tokens (probability 0) are left out."""
    p, i = logp.topk(min(k, logp.size(-1) - len(NEVER_EMITTED)), dim=-1)
    return p.exp(), i


def _best_continuations(
    logp: Tensor, scores: Tensor, lengths: Tensor, finished: Tensor, alpha: float
) -> tuple[Tensor, Tensor, Tensor, Tensor, Tensor]:
    """The K best-ranked one-token continuations of every input's K beams.

    logp (B, K, V) the next token's log-probabilities; scores, lengths, finished (B, K) of the
    beams. Returns, each (B, K) and best first: the beam each continues, its token, and its
    score, length and finished flag.
    """
    b, k, vocab = logp.shape
    # a finished beam continues only with PAD at no cost, keeping its score and length
    frozen = torch.full_like(logp[0, 0], float("-inf"))
    frozen[PAD_ID] = 0.0
    logp = torch.where(finished.unsqueeze(-1), frozen, logp)
    total = scores.unsqueeze(-1) + logp  # (B, K, V)
    new_len = (lengths + (~finished).long()).unsqueeze(-1).expand_as(total)
    ranked = total / length_penalty(new_len, alpha)
    _, flat = ranked.view(b, -1).topk(k, dim=-1)  # (B, K)
    beam, token = flat // vocab, flat % vocab
    scores = total.view(b, -1).gather(1, flat)
    lengths = new_len.reshape(b, -1).gather(1, flat)
    finished = finished.gather(1, beam) | (token == EOS_ID)
    return beam, token, scores, lengths, finished


def _collect(
    results, inputs, done, history, scores, lengths, finished, src_lengths, alpha, k, n_best
) -> None:
    """Store the ``n_best`` hypotheses of every input marked ``done``, best first."""
    idx = done.nonzero().squeeze(1)  # (D,) only these inputs' rows leave the device
    rows = (idx.unsqueeze(1) * k + torch.arange(k, device=idx.device)).view(-1)  # (D*K,)
    final = (scores[idx] / length_penalty(lengths[idx], alpha)).cpu()  # (D, K)
    kept = history.rows(rows)
    heads = None if kept.heads is None else kept.heads.cpu()  # (D*K, t, L, H, S)
    top = None if kept.top is None else (kept.top[0].cpu(), kept.top[1].cpu())  # (D*K, t, k)
    switch = None if kept.switch is None else kept.switch.cpu()  # (D*K, t)
    history, attn = kept.tokens.cpu(), kept.attn.float().cpu()  # (D*K, t), (D*K, t, S)
    scores, finished = scores[idx].cpu(), finished[idx].cpu()
    for d, i in enumerate(idx.tolist()):
        source = int(inputs[i])
        hyps = []
        for j in final[d].argsort(descending=True)[:n_best].tolist():
            row = history[d * k + j].tolist()
            ended = bool(finished[d, j])
            n = row.index(EOS_ID) if ended else len(row)
            length = n + 1 if ended else n  # attention rows: the tokens and </s>
            s = int(src_lengths[source])
            hyp = Hypothesis(
                row[:n],
                attn[d * k + j, :length, :s],
                float(scores[d, j]),
                ended,
                None if heads is None else heads[d * k + j, :length, ..., :s],
            )
            if top is not None:
                hyp.top = (top[0][d * k + j, :length], top[1][d * k + j, :length])
            if switch is not None:
                hyp.p_gen = switch[d * k + j, :length]
            hyps.append(hyp)
        results[source] = hyps
