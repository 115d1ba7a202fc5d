"""Extended vocabulary ids for a model that copies source words (the pointer-generator).

A copy model (``model.copy: true``) reads and writes through one vocabulary ``V`` (the same
tokens on both sides), so a source id is also the target id of the same word. A word the
vocabulary lacks is not ``<unk>`` but a temporary id of its own example: the j-th distinct such
word of a source, in order of first appearance, is ``len(V) + j``. The model embeds those ids as
``<unk>`` and can still copy them by position; an output id ``len(V) + j`` means "the j-th
unknown word of this source", which :func:`decode_extended` turns back into the word.

The ids depend only on the example itself, never on the batch it is decoded in.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from attnkit.data.vocab import SPECIALS, UNK, UNK_ID, Vocab


def source_oovs(tokens: Sequence[str], vocab: Vocab) -> list[str]:
    """The distinct tokens of a source that ``vocab`` lacks, in order of first appearance (index
    j holds the word of extended id ``len(vocab) + j``)."""
    return list(dict.fromkeys(t for t in tokens if t not in vocab.stoi))


def encode_extended(tokens: Sequence[str], vocab: Vocab, oovs: Sequence[str]) -> list[int]:
    """Tokens -> ids; a token ``vocab`` lacks gets ``len(vocab) + j``, j its index in ``oovs``
    (the source's unknown words), or ``<unk>`` when the source does not hold it either."""
    extra = {word: len(vocab) + j for j, word in enumerate(oovs)}
    return [vocab.stoi.get(t, extra.get(t, UNK_ID)) for t in tokens]


def decode_extended(ids: Iterable[int], vocab: Vocab, oovs: Sequence[str]) -> list[str]:
    """Output ids (no specials stripped) -> tokens; ``len(vocab) + j`` is ``oovs[j]`` (``<unk>``
    beyond them)."""
    out = []
    for i in ids:
        i = int(i)
        if i < len(vocab):
            out.append(vocab.itos[i] if i >= 0 else UNK)
        else:
            j = i - len(vocab)
            out.append(oovs[j] if j < len(oovs) else UNK)
    return out


def output_ids(
    tokens: Sequence[str], source: Sequence[str], src: Vocab, tgt: Vocab, copies: bool
) -> list[int]:
    """Output tokens of ``source`` (its tokens) -> target ids: for a copying model (``copies``)
    a word the vocabulary lacks is the extended id of the source word it copies, else
    ``<unk>``. What forcing a model along an output (a reference, its own) decodes."""
    return encode_extended(tokens, tgt, source_oovs(source, src) if copies else [])


def joint_vocab(sources: Iterable[Sequence[str]], targets: Iterable[Sequence[str]]) -> Vocab:
    """One vocabulary of both sides' tokens (a copy model's), most frequent first."""
    return Vocab.build(list(sources) + list(targets))


def same_vocab(src: Vocab, tgt: Vocab) -> bool:
    """Whether two vocabularies hold the same tokens in the same order (a copy model needs it)."""
    return src.itos == tgt.itos and tuple(src.itos[: len(SPECIALS)]) == SPECIALS
