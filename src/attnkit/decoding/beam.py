"""Batched beam search over B*K rows.

All K beams of all B inputs advance in one decoder call per step. Beams that
have emitted ``</s>`` stay in the beam with a frozen score and length, so they
keep competing with the open ones; candidates are ranked by the length-
normalised score log p / lp(len), lp = ((5 + len) / 6) ** alpha (Wu et al.
2016). Beam size 1 is greedy decoding.
"""

from __future__ import annotations

import torch
from torch import Tensor

from attnkit.data.vocab import BOS_ID, EOS_ID, PAD_ID
from attnkit.decoding.greedy import Hypothesis, output_log_probs


def length_penalty(length: Tensor, alpha: float) -> Tensor:
    return ((5.0 + length.float()) / 6.0) ** alpha


@torch.inference_mode()
def beam_search(model, src: Tensor, src_lengths: Tensor, max_len: int, beam_size: int = 5,
                alpha: float = 1.0, n_best: int = 1) -> list[list[Hypothesis]]:
    """src (B, S) -> for each input its ``n_best`` hypotheses, best first."""
    if not 1 <= n_best <= beam_size:
        raise ValueError(f"n_best ({n_best}) must be between 1 and the beam size ({beam_size})")
    b, k, device = src.size(0), beam_size, src.device
    memory, state = model.encode(src, src_lengths)
    rows = torch.arange(b, device=device).repeat_interleave(k)  # (B*K,) which input each beam reads
    memory, state = memory.index_select(rows), state.index_select(rows)  # memory never needs reordering again

    scores = torch.full((b, k), float("-inf"), device=device)
    scores[:, 0] = 0.0  # one live beam at the start, so the first step does not pick K copies
    lengths = torch.zeros(b, k, dtype=torch.long, device=device)
    finished = torch.zeros(b, k, dtype=torch.bool, device=device)
    prev = torch.full((b * k,), BOS_ID, dtype=torch.long, device=device)
    history = torch.empty(b * k, 0, dtype=torch.long, device=device)  # (B*K, t)
    attn = torch.empty(b * k, 0, src.size(1), device=device)  # (B*K, t, S)
    base = (torch.arange(b, device=device) * k).unsqueeze(1)  # (B, 1)

    for _ in range(max_len):
        logits, state, w = model.decoder.step(prev, state, memory)  # (B*K, V), (B*K, S)
        logp = output_log_probs(logits).view(b, k, -1)  # (B, K, V)
        vocab = logp.size(-1)
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
        was_finished = finished.gather(1, beam)
        finished = was_finished | (token == EOS_ID)

        order = (base + beam).view(-1)  # (B*K,) rows to continue from
        state = state.index_select(order)
        history = torch.cat([history.index_select(0, order), token.view(-1, 1)], 1)
        attn = torch.cat([attn.index_select(0, order), w.index_select(0, order).unsqueeze(1)], 1)
        prev = token.view(-1)
        if bool(finished.all()):
            break

    final = scores / length_penalty(lengths, alpha)
    return _best(history.cpu(), attn.float().cpu(), scores.cpu(), final.cpu(), finished.cpu(), src_lengths.cpu(), k, n_best)


def _best(history, attn, scores, final, finished, src_lengths, k, n_best) -> list[list[Hypothesis]]:
    results = []
    for i in range(final.size(0)):
        order = final[i].argsort(descending=True)[:n_best].tolist()
        hyps = []
        for j in order:
            row = history[i * k + j].tolist()
            done = bool(finished[i, j])
            n = row.index(EOS_ID) if done else len(row)
            rows = n + 1 if done else n
            hyps.append(Hypothesis(row[:n], attn[i * k + j, :rows, : int(src_lengths[i])], float(scores[i, j]), done))
        results.append(hyps)
    return results
