"""What the pictures of a model without attention show: its gradient saliency.

A model with ``model.attention: none`` decodes with all-zero weights (``has_attention`` is False),
which no picture may draw and no score may read as attention. Where a heatmap of its attention
would be drawn (``attnkit plot``, the demo, report.html), :func:`pictured` gives the saliency map
of the same output instead (:mod:`attnkit.explain.saliency`, captum, the ``gradient`` method),
and :data:`TITLE` says on the picture what it is.

A ``translator`` here is the seq2seq family's
:class:`~attnkit.families.seq2seq.translator.Translator` (what is read of it: ``model``,
``config``, ``device``, its vocabularies and ``encode_sources``) and a translation its
``Translation``; the family hands them in, this floor below it imports neither.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from attnkit.data.batching import collate
from attnkit.data.copy_ids import output_ids
from attnkit.data.vocab import EOS
from attnkit.explain.saliency import saliency_maps

#: the title of every picture of a model without attention
TITLE = "no attention: gradient saliency"
#: what a report of such a model says above its pictures
NOTE = (
    "This model has no attention (model.attention: none): its decoder reads the encoder's final "
    "state alone. The pictures show gradient saliency instead, how much each output token "
    "depends on each source token (rows sum to 1)."
)


def saliency_translations(translator, translations: Sequence, method: str = "gradient") -> list:
    """The same translations with the saliency maps of their outputs as weights
    (len(output_tokens), len(source_tokens)): the model is forced along each output token by
    token (from greedy decoding, beam search or a forced reference alike). Each must have a
    decoded source (not a blank input)."""
    examples, _ = translator.encode_sources([t.source for t in translations], warn_unknown=False)
    sides = (translator.src_vocab, translator.tgt_vocab, translator.copies)
    targets = [
        output_ids(
            t.output_tokens[:-1] if _finished(t) else t.output_tokens, t.source_tokens, *sides
        )
        for t in translations
    ]
    maps: list[np.ndarray | None] = [None] * len(translations)
    size = translator.config.decode.batch_size
    for start in range(0, len(examples), size):
        batch = collate(examples[start : start + size]).to(translator.device)
        rows = saliency_maps(
            translator.model,
            batch.src,
            batch.src_lengths,
            [targets[i] for i in batch.indices],
            method,
        )
        for index, m in zip(batch.indices, rows):
            maps[index] = m.numpy()
    return [
        # an output cut off before </s> has no row for it
        type(t)(
            t.source, t.source_tokens, t.output, t.output_tokens, m[: len(t.output_tokens)], t.score
        )
        for t, m in zip(translations, maps)
    ]


def _finished(translation) -> bool:
    return translation.output_tokens[-1:] == [EOS]


def can_explain(translator) -> bool:
    """Whether saliency can be drawn for the translator's model: one model, not an ensemble
    (captum differentiates one encoder's embeddings)."""
    return getattr(translator.model, "members", None) is None


def pictured(translator, translations: Sequence) -> list:
    """The translations as pictures show them, one per translation: as they are for a model that
    attends; for one without attention, with their outputs' saliency maps in place of the zero
    weights (a blank input, with nothing decoded, stays as it is). An ensemble without
    attention has no pictures: []."""
    if translator.model.has_attention:
        return list(translations)
    if not can_explain(translator):
        return []
    shown = list(translations)
    decoded = [i for i, t in enumerate(shown) if t.source_tokens]
    if decoded:
        maps = saliency_translations(translator, [shown[i] for i in decoded])
        for i, m in zip(decoded, maps):
            shown[i] = m
    return shown
