"""One batch through greedy decoding or beam search, from a forced target prefix when given:
what :meth:`attnkit.families.seq2seq.translator.Translator.decode` runs for each of its batches."""

from __future__ import annotations

from dataclasses import dataclass

import torch

from attnkit.decoding.beam import beam_search, length_penalty
from attnkit.decoding.greedy import greedy_decode, target_position_limit
from attnkit.decoding.prefix import PrefixedModel, prefixed_hypotheses


@dataclass(frozen=True)
class SearchOptions:
    """How :func:`search` decodes: beam size (1: greedy), length penalty, outputs kept, a forced
    target prefix (ids) or None, whether to keep every head's weights, and how many of the most
    likely tokens of every decoded step to keep (greedy and beam search alike; not for the
    forced prefix's steps). Equal options decode together (the server batches requests by
    them), so the prefix is a tuple."""

    beam_size: int
    alpha: float
    n_best: int
    prefix_ids: tuple[int, ...] | None
    heads: bool
    top_k: int = 0


def search(model, batch, max_len, options: SearchOptions) -> list[list]:
    """Greedy or beam search of one batch (from the prefix, when given): per input its
    hypotheses, best first, at most ``max_len`` (B,) tokens each, and at most as many as the
    model has target positions (a Transformer's learned table ends there)."""
    o = options
    limit = target_position_limit(model)
    if limit is not None:
        max_len = torch.as_tensor(max_len).clamp_max(limit)  # (B,)
    decoder_model = model
    if o.prefix_ids is not None:  # the continuation's budget; at least one step
        decoder_model = PrefixedModel(model, o.prefix_ids, keep_heads=o.heads)
        max_len = (max_len - len(o.prefix_ids)).clamp_min(1)  # (B,)
    src, lengths = batch.src, batch.src_lengths
    top_k = o.top_k if o.prefix_ids is None else 0  # a prefix's rows are not decoded
    if o.beam_size == 1:
        hyps = greedy_decode(decoder_model, src, lengths, max_len, o.heads, top_k)
        options_per_input = [[h] for h in hyps]
    else:
        options_per_input = beam_search(
            decoder_model,
            src,
            lengths,
            max_len,
            o.beam_size,
            o.alpha,
            o.n_best,
            keep_heads=o.heads,
            top_k=top_k,
        )
    if o.prefix_ids is None:
        return options_per_input
    whole = prefixed_hypotheses(decoder_model, options_per_input, lengths)
    if o.beam_size > 1:  # ranked again as whole outputs: the prefix counts in the length
        for hyps in whole:
            hyps.sort(key=lambda h: -h.score / _length_penalty(h, o.alpha))
    return whole


def _length_penalty(hyp, alpha: float) -> float:
    """Beam search's length penalty of a whole hypothesis (its tokens and </s>)."""
    return float(length_penalty(torch.tensor(len(hyp.tokens) + int(hyp.finished)), alpha))
