"""The model's k most likely tokens at every step of given outputs.

:func:`top_k_steps` gives them for a translator's outputs (a
:class:`~attnkit.families.seq2seq.translator.Translator` and its
:class:`~attnkit.families.seq2seq.translator.Translation` list): read from what the search
kept where it kept them, else by the pass below.

One teacher-forced pass over each output (as :mod:`attnkit.decoding.forced`): at step t the
decoder has read ``<s>`` and the output's first t tokens, and its distribution over the next
token is what an explorer shows beside the token that was chosen.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import Tensor

from attnkit.data.batching import collate
from attnkit.data.vocab import BOS_ID, EOS, EOS_ID
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


def top_k_steps(translator, translations: Sequence, k: int) -> list[list[list]]:
    """The model's ``k`` most likely tokens at every output step of each translation (one
    teacher-forced pass, :func:`step_top_k`): per translation, one
    list per output token of ``(token, probability)`` pairs, best first. A blank input's
    translation gets []."""
    filled = [i for i, t in enumerate(translations) if t.source_tokens]
    out: list[list[list]] = [[] for _ in translations]
    if not filled:
        return out
    if all(
        translations[i].top is not None and translations[i].top[1].shape[1] >= k for i in filled
    ):
        for i in filled:  # greedy decoding kept them
            probs, ids = translations[i].top
            shown = len(translations[i].output_tokens)
            out[i] = [
                list(zip(translator.tgt_vocab.decode(r[:k], strip_specials=False), p[:k]))
                for r, p in zip(ids[:shown].tolist(), probs[:shown].tolist())
            ]
        return out
    examples, _ = translator.encode_sources([translations[i].source for i in filled], False)
    targets = [_target_ids(translator.tgt_vocab, translations[i]) for i in filled]
    size = translator.config.decode.batch_size
    for start in range(0, len(examples), size):
        batch = collate(examples[start : start + size]).to(translator.device)
        rows = step_top_k(
            translator.model, batch.src, batch.src_lengths, [targets[j] for j in batch.indices], k
        )
        for j, (probs, ids) in zip(batch.indices, rows):
            shown = len(translations[filled[j]].output_tokens)
            out[filled[j]] = [
                list(zip(translator.tgt_vocab.decode(r, strip_specials=False), p))
                for r, p in zip(ids[:shown].tolist(), probs[:shown].tolist())
            ]
    return out


def _target_ids(vocab, translation) -> list[int]:
    """The output tokens of ``translation`` as ids, without the closing </s>."""
    tokens = translation.output_tokens
    return vocab.encode(tokens[:-1] if tokens[-1:] == [EOS] else tokens)
