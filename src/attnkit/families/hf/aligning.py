"""A pretrained translator's cross-attention as a word alignment, scored against human links:
``attnkit evaluate --model hf:DIR --gold DIR`` and ``m.alignment_error(gold)``.

Each gold pair (:func:`attnkit.data.tasks.human_gold.read_human_gold`: tokenized words, links)
is run teacher-forced: the source through the encoder, the gold target (the tokenizer's
``text_target`` ids, ``</s>`` last) through the decoder after its start token. Its
cross-attention (T, S), the mean of every layer and head or of one layer's heads, is brought to
the gold words by :func:`attnkit.evaluation.word_alignment.to_words` (a source word's pieces
summed, a target word's averaged, the special tokens dropped, rows renormalised), once each
token is known to belong to a word (:func:`owners`: the tokenizer's own words, from
:mod:`attnkit.families.hf.words`, laid along the gold words character by character). Each target
word is linked to its most-attended source word and
:func:`attnkit.evaluation.alignment.alignment_metrics` scores the links: AER, precision
(argmax in span) and recall, pooled over the corpus. A pair whose tokens do not spell its words
(an unknown character, a normalisation) is left out and counted.

Shapes: L layers, H heads, T target tokens, S source tokens.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import torch

from attnkit.errors import AttnkitError, DataError
from attnkit.families.hf.inputs import check_length
from attnkit.families.hf.words import Tokens, from_encoding, from_ids


def owners(tokens: Tokens, words: list[str]) -> list[int | None] | None:
    """The index into ``words`` of each position of ``tokens`` (None: a special token), found by
    laying the tokenizer's words along ``words`` with the blanks removed; None when the two do
    not spell the same characters."""
    starts, at = [], 0
    for word in words:
        starts.append(at)
        at += len("".join(word.split()))
    spelled = "".join("".join(w.split()) for w in words)
    found: list[int | None] = [None] * len(tokens)
    at = 0
    for unit in tokens.units():
        word = tokens.words[unit[0]]
        if word is None:
            continue
        text = "".join(tokens.word_labels.get(word, "").split())
        if not text or spelled[at : at + len(text)] != text:
            return None
        owner = int(np.searchsorted(starts, at, side="right")) - 1
        for position in unit:
            found[position] = owner
        at += len(text)
    return found if at == len(spelled) else None


def _target(pm, text: str) -> tuple[list[int], Tokens]:
    """The ids (``</s>`` last) and tokens of a target sentence, by the target tokenizer."""
    encoding = pm.processor(text_target=text, return_tensors="pt")
    ids = [int(i) for i in encoding["input_ids"][0]]
    tokens = from_encoding(pm.processor, encoding, text)
    return ids, (tokens if getattr(encoding, "is_fast", False) else from_ids(pm.processor, ids))


def cross_maps(pm, source: str, target: str) -> tuple[np.ndarray, Tokens, Tokens]:
    """(cross-attention (L, H, T, S) of ``target`` teacher-forced after ``source``, the target's
    tokens (T), the source's (S))."""
    forward, source_tokens = pm._text(source)
    ids, target_tokens = _target(pm, target)
    check_length(len(ids), pm.model, pm.processor, pm.name, "the target")
    start = pm.model.generation_config.decoder_start_token_id
    if start is None:
        start = pm.model.config.decoder_start_token_id
    along = {**forward, "decoder_input_ids": torch.tensor([[start, *ids[:-1]]], device=pm.device)}
    _, parts = pm._attend(along, {"cross": (target_tokens, source_tokens)})
    return parts["cross"].heads, target_tokens, source_tokens


def word_map(heads: np.ndarray, rows: list[int | None], cols: list[int | None]) -> np.ndarray:
    """(H, T, S) or (T, S) -> (target words, source words): the heads averaged, the special
    rows and columns dropped, the rest brought to words (``rows``/``cols``: each token's
    word)."""
    from attnkit.evaluation.word_alignment import to_words

    weights = heads.mean(0) if heads.ndim == 3 else heads
    keep_rows = [i for i, w in enumerate(rows) if w is not None]
    keep_cols = [i for i, w in enumerate(cols) if w is not None]
    kept = weights[np.ix_(keep_rows, keep_cols)]
    return to_words(kept, [rows[i] for i in keep_rows], [cols[i] for i in keep_cols])


def gold_files(gold: str | Path) -> tuple[Path, Path]:
    """(``NAME.src-tgt``, ``NAME.gold``) of ``gold``: either file, or a directory holding one
    such pair."""
    gold = Path(gold)
    if gold.is_dir():
        pairs = sorted(gold.glob("*.src-tgt"))
        if len(pairs) != 1:
            raise DataError(f"{len(pairs)} *.src-tgt files (want one, with its .gold)", gold)
        gold = pairs[0]
    if not gold.exists():
        raise DataError("no such file or directory", gold)
    stem = gold.with_suffix("")
    return stem.with_suffix(".src-tgt"), stem.with_suffix(".gold")


def alignment_error(pm, gold: str | Path, layer: int | None = None, count: int | None = None):
    """AER, precision and recall (%) of ``pm``'s cross-attention against the human links of
    ``gold`` (:func:`gold_files`), the first ``count`` pairs (None: all); ``layer`` (from 1):
    that layer's heads averaged, None: every layer's and head's mean. ``per_layer``: each
    layer's AER. Returns a :class:`~attnkit.evaluation.scores.Scores`."""
    from attnkit.data.tasks.human_gold import read_human_gold
    from attnkit.evaluation.alignment import alignment_metrics
    from attnkit.evaluation.scores import Scores

    if pm.kind.task != "translate":
        raise AttnkitError(f"AER: {pm.name} is {pm.kind.words}; it is for translation models")
    pairs = read_human_gold(*gold_files(gold))[:count]
    maps, golds, skipped = [], [], 0
    with torch.no_grad():
        for pair in pairs:
            heads, target, source = cross_maps(pm, " ".join(pair.source), " ".join(pair.target))
            rows, cols = owners(target, pair.target), owners(source, pair.source)
            if rows is None or cols is None:
                skipped += 1
                continue
            if layer is not None and not 1 <= layer <= heads.shape[0]:
                raise AttnkitError(f"--layer {layer}: {pm.name} has layers 1 to {heads.shape[0]}")
            chosen = heads.mean(0) if layer is None else heads[layer - 1]  # (H, T, S)
            maps.append([word_map(h, rows, cols) for h in (chosen, *heads)])
            golds.append(pair.gold)
    if not maps:
        raise AttnkitError(f"AER: no pair of {gold} could be laid along its tokens")
    scores = alignment_metrics((m[0], g) for m, g in zip(maps, golds))
    per_layer = [
        {"layer": n, "aer": alignment_metrics((m[n], g) for m, g in zip(maps, golds)).get("aer")}
        for n in range(1, len(maps[0]))
    ]
    what = "every layer and head" if layer is None else f"layer {layer}, its heads"
    return Scores(
        {
            "model": pm.name,
            "gold": str(gold),
            "attention": f"cross-attention, the mean of {what}",
            "pairs": len(pairs),
            "skipped": skipped,
            **scores,
            "per_layer": per_layer,
        },
        table,
    )


def table(scores: dict) -> str:
    """What ``attnkit evaluate --gold`` prints."""
    if "aer" not in scores:
        return f"{scores['model']}: no gold link was scored"
    layers = ", ".join(f"{r['layer']}: {r['aer']}" for r in scores["per_layer"])
    return "\n".join(
        [
            f"{scores['model']}: {scores['attention']}, {scores['examples']} of "
            f"{scores['pairs']} pairs ({scores['skipped']} not laid along their tokens)",
            f"AER {scores['aer']}%  precision {scores['argmax_in_span']}%  "
            f"recall {scores['recall']}%",
            f"AER of each layer (heads averaged): {layers}",
        ]
    )
