"""A seq2seq model's attention (or saliency) as a word alignment of real sentence pairs, scored
against human links (:mod:`attnkit.data.tasks.human_gold`).

The model is made to write the gold pair's target (forced decoding,
:meth:`attnkit.families.seq2seq.translator.Translator.teacher_forced`) and its map over subword
tokens is brought to words: the columns of a source word's pieces are summed, the rows of a
target word's pieces averaged, the ``</s>`` row and column dropped and each row renormalised.
Each target word is then linked to its most-attended source word, and the links are scored by
:class:`~attnkit.evaluation.alignment.AlignmentTotals`: AER, precision (links on a sure or
possible gold link) and recall (sure gold links found).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import torch

from attnkit.data.batching import collate
from attnkit.data.tasks.human_gold import GoldPair
from attnkit.errors import AttnkitError
from attnkit.evaluation.alignment import alignment_metrics
from attnkit.explain.saliency import METHODS, saliency_maps

#: the maps a model is scored by: its attention, and each saliency method of captum's
MAP_KINDS = ("attention", *METHODS)


def word_pieces(tokenizer, words: Sequence[str], what: str) -> list[int]:
    """The word index of each token the tokenizer makes of ``" ".join(words)`` (``</s>``
    excluded); an error if tokenizing word by word does not give the sentence's tokens."""
    pieces, owner = [], []
    for index, word in enumerate(words):
        tokens = tokenizer.tokenize(word)
        pieces += tokens
        owner += [index] * len(tokens)
    if tokenizer.tokenize(" ".join(words)) != pieces:
        raise AttnkitError(
            f"{what}: the tokenizer splits the sentence otherwise than word by word, so its "
            "tokens cannot be mapped to words"
        )
    return owner


def to_words(weights: np.ndarray, target_owner: list[int], source_owner: list[int]) -> np.ndarray:
    """(T + 1, S + 1) token map with ``</s>`` last on both sides -> (target words, source words):
    a source word's columns summed, a target word's rows averaged, rows renormalised."""
    t, s = len(target_owner), len(source_owner)
    tokens = np.asarray(weights, dtype=np.float64)[:t, :s]  # without </s>
    rows = np.zeros((max(target_owner) + 1, t))
    rows[target_owner, np.arange(t)] = 1.0
    rows /= rows.sum(axis=1, keepdims=True)  # mean over a word's pieces
    cols = np.zeros((s, max(source_owner) + 1))
    cols[np.arange(s), source_owner] = 1.0  # sum over a word's pieces
    words = rows @ tokens @ cols
    return words / np.clip(words.sum(axis=1, keepdims=True), 1e-12, None)


def word_maps(translator, pairs: Sequence[GoldPair], kind: str = "attention") -> list[np.ndarray]:
    """One (target words, source words) map per pair: the model's attention while it writes the
    target, or the saliency ``kind`` (``gradient``, ``input_x_gradient``,
    ``integrated_gradients``) of each target token over the source tokens."""
    if kind not in MAP_KINDS:
        raise AttnkitError(f"unknown map {kind!r}; valid: {', '.join(MAP_KINDS)}")
    owners = [
        (
            word_pieces(translator.tgt_tokenizer, p.target, f"pair {n} target"),
            word_pieces(translator.src_tokenizer, p.source, f"pair {n} source"),
        )
        for n, p in enumerate(pairs, start=1)
    ]
    sources = [" ".join(p.source) for p in pairs]
    targets = [" ".join(p.target) for p in pairs]
    if kind == "attention":
        token_maps = [t.weights for t in translator.teacher_forced(sources, targets)]
    else:
        token_maps = _saliency(translator, sources, targets, kind)
    return [to_words(m, tgt, src) for m, (tgt, src) in zip(token_maps, owners)]


def _saliency(translator, sources, targets, method: str, batch: int = 32) -> list[np.ndarray]:
    examples, _ = translator.encode_sources(sources, warn_unknown=False)
    ids = [translator.tgt_vocab.encode(translator.tgt_tokenizer.tokenize(t)) for t in targets]
    maps: list[np.ndarray] = [np.empty(0)] * len(sources)
    for start in range(0, len(examples), batch):
        part = collate(examples[start : start + batch]).to(translator.device)
        found = saliency_maps(
            translator.model, part.src, part.src_lengths, [ids[i] for i in part.indices], method
        )
        for index, m in zip(part.indices, found):
            maps[index] = m.numpy()
    return maps


def score_word_alignment(
    translator, pairs: Sequence[GoldPair], kind: str = "attention", rule: str = "all"
) -> dict:
    """AER, precision and recall (%) of the model's ``kind`` map against the pairs' human links,
    with the maps' entropy; pooled over the corpus. ``rule``: every target word's link scored
    (``"all"``, the standard ``aer.py``'s), or only those of words with gold links
    (``"gold_linked"``, the rule of figures recorded before it was the default)."""
    with torch.no_grad() if kind == "attention" else torch.enable_grad():
        maps = word_maps(translator, pairs, kind)
    return alignment_metrics(((m, p.gold) for m, p in zip(maps, pairs)), rule)
