"""Decoding from a forced target prefix (the what-if of an explorer).

The decoder is stepped through the prefix tokens teacher-forced (as in
:mod:`attnkit.decoding.forced`), then greedy decoding or beam search continues from that state.
:class:`PrefixedModel` wraps a model (or an ensemble) so that the existing search functions do
the continuing unchanged: its ``encode`` returns the state *after* the prefix, and its decoder's
first step reads the last prefix token in place of ``<s>``. :func:`prefixed_hypotheses` then puts
the prefix back in front of every hypothesis: its tokens, its attention rows and its
log-probability.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import Tensor

from attnkit.data.vocab import BOS_ID
from attnkit.decoding.greedy import Hypothesis, output_log_probs, split_weights, switch_of


class _PrefixedDecoder:
    """The wrapped model's decoder whose first step feeds the last prefix token."""

    def __init__(self, decoder, last_token: int):
        self._decoder, self._last, self._first = decoder, last_token, True

    def step(self, prev: Tensor, state, memory):
        if self._first:  # the search starts from <s>; the prefix's last token comes instead
            prev = torch.full_like(prev, self._last)
            self._first = False
        return self._decoder.step(prev, state, memory)


class PrefixedModel:
    """``model`` seen by greedy / beam search as if every output began with ``prefix``.

    One use per search: ``encode`` steps through the prefix and keeps, for every input row, the
    prefix's attention ``weights`` (B, P, S), its log-probability ``logp`` (B,) and, with
    ``keep_heads`` and a model that has them, every layer's and head's ``heads`` (B, P, L, H, S).
    """

    def __init__(self, model, prefix: Sequence[int], keep_heads: bool = False):
        if not prefix:
            raise ValueError("an empty prefix: decode without one")
        self.model, self.prefix, self.keep_heads = model, list(prefix), keep_heads
        self.decoder = _PrefixedDecoder(model.decoder, self.prefix[-1])
        self.weights: Tensor | None = None
        self.logp: Tensor | None = None
        self.heads: Tensor | None = None
        self.p_gen: Tensor | None = None  # (B, P): a copying decoder's switch on the prefix

    def encode(self, src: Tensor, src_lengths: Tensor):
        """src (B, S) -> (memory, the decoder state that has read <s> and all prefix tokens
        but the last; the search's first step reads that one)."""
        memory, state = self.model.encode(src, src_lengths)
        b, device = src.size(0), src.device
        prev = torch.full((b,), BOS_ID, dtype=torch.long, device=device)
        logp = torch.zeros(b, device=device)
        rows, head_rows, switch = [], [], []
        for token in self.prefix:
            logits, state, w = self.model.decoder.step(prev, state, memory)  # (B, V), (B, ..., S)
            logp += output_log_probs(logits)[:, token]
            w, w_heads = split_weights(w)
            rows.append(w.float())
            if w_heads is not None:
                head_rows.append(w_heads.float())
            if switch_of(state) is not None:
                switch.append(switch_of(state).float())
            prev = torch.full_like(prev, token)
        self.weights = torch.stack(rows, 1)  # (B, P, S)
        if self.keep_heads and head_rows:
            self.heads = torch.stack(head_rows, 1)  # (B, P, L, H, S)
        self.logp = logp
        self.p_gen = torch.stack(switch, 1) if switch else None
        return memory, state


def prefixed_hypotheses(
    wrapped: PrefixedModel, hyps: list[list[Hypothesis]], src_lengths: Tensor
) -> list[list[Hypothesis]]:
    """Hypotheses of the continuation (one list per input row, as the search returned them) ->
    whole hypotheses: the prefix tokens first, their attention rows on top, their
    log-probability added to the score."""
    assert wrapped.weights is not None and wrapped.logp is not None, "encode has not run"
    weights, logp = wrapped.weights.cpu(), wrapped.logp.cpu()
    heads = None if wrapped.heads is None else wrapped.heads.cpu()
    switch = None if wrapped.p_gen is None else wrapped.p_gen.cpu()  # (B, P)
    out = []
    for row, options in enumerate(hyps):
        n = int(src_lengths[row])
        whole = []
        for h in options:
            hyp = Hypothesis(
                wrapped.prefix + h.tokens,
                torch.cat([weights[row, :, :n], h.weights.float()], 0),
                float(logp[row]) + h.score,
                h.finished,
                None
                if heads is None or h.heads is None
                else torch.cat([heads[row, ..., :n], h.heads.float()], 0),
            )
            if switch is not None and h.p_gen is not None:
                hyp.p_gen = torch.cat([switch[row], h.p_gen.float()], 0)
            whole.append(hyp)
        out.append(whole)
    return out
