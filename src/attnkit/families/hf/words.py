"""Tokens and the words they make: a sequence's labels (one per position) and which word each
position belongs to, and maps merged from subwords to words.

A text the tokenizer encoded knows its words from the tokenizer itself (a fast tokenizer's
``word_ids`` and their character spans in the text). Tokens a model generated, and the encodings
of a tokenizer without offsets, are grouped by decoding: a token starts a new word when the text
it adds begins with a space (``▁``, ``Ġ``), or follows a special token; WordPiece's ``##`` pieces
join the word before them. Special tokens ([CLS], </s>) stand alone.

Merging a map (..., T, S) to words: the weight a query puts on a word is the sum of what it puts
on the word's pieces (the rows still sum to 1), and a word's row is the mean of its pieces' rows
(Clark et al. 2019, "What does BERT look at?").
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np


@dataclass
class Tokens:
    """A sequence of positions: ``labels`` (the tokens as the tokenizer writes them), ``words``
    (the word of each position, None for one that stands alone) and ``word_labels`` (word ->
    its text)."""

    labels: list[str]
    words: list[int | None]
    word_labels: dict[int, str]

    def __len__(self) -> int:
        return len(self.labels)

    def units(self) -> list[list[int]]:
        """The positions of each word, in order (a position standing alone: its own unit)."""
        units: list[list[int]] = []
        for position, word in enumerate(self.words):
            if word is not None and units and self.words[units[-1][0]] == word:
                units[-1].append(position)
            else:
                units.append([position])
        return units

    def unit_labels(self) -> list[str]:
        """One label per unit: a word's text, else its tokens joined."""
        out = []
        for unit in self.units():
            joined = "".join(self.labels[p] for p in unit)
            word = self.words[unit[0]]
            out.append((self.word_labels.get(word) if word is not None else None) or joined)
        return out

    def shifted(self, first: str) -> Tokens:
        """The same sequence one position later, ``first`` (alone) in front: a decoder's inputs
        from the tokens it emitted."""
        return Tokens([first, *self.labels[:-1]], [None, *self.words[:-1]], dict(self.word_labels))

    @classmethod
    def positions(cls, labels: Sequence[str]) -> Tokens:
        """Labels with no words (an image's patches): each position its own unit."""
        return cls(list(labels), [None] * len(labels), {})


def from_encoding(tokenizer, encoding, text: str) -> Tokens:
    """The tokens of ``text`` as the tokenizer encoded it (a BatchEncoding of one sequence),
    grouped by the tokenizer's own ``word_ids`` where it has them (a fast tokenizer)."""
    ids = encoding["input_ids"][0].tolist()
    labels = tokenizer.convert_ids_to_tokens(ids)
    if not getattr(encoding, "is_fast", False):
        return from_ids(tokenizer, ids)
    words = encoding.word_ids(0)
    word_labels = {}
    for word in {w for w in words if w is not None}:
        span = encoding.word_to_chars(0, word)
        word_labels[word] = text[span.start : span.end].strip() if span is not None else ""
    return Tokens([str(t) for t in labels], list(words), word_labels)


def from_ids(tokenizer, ids: Sequence[int]) -> Tokens:
    """Tokens grouped by decoding (see the module docstring): for generated ids."""
    ids = [int(i) for i in ids]
    labels = [str(t) for t in tokenizer.convert_ids_to_tokens(ids)]
    special = set(tokenizer.all_special_ids)
    words: list[int | None] = []
    word_labels: dict[int, str] = {}
    kept: list[int] = []  # the non-special ids so far, decoded together
    before, word, fresh = "", -1, True
    for token in ids:
        if token in special:
            words.append(None)
            fresh = True
            continue
        kept.append(token)
        now = tokenizer.decode(kept, clean_up_tokenization_spaces=False)
        piece = now[len(before) :] if now.startswith(before) else tokenizer.decode([token])
        before = now
        if fresh or piece[:1].isspace() or word < 0:
            word += 1
            word_labels[word] = ""
        fresh = False
        words.append(word)
        word_labels[word] += piece.strip()
    return Tokens(labels, words, word_labels)


def joined(first: Tokens, second: Tokens) -> Tokens:
    """``first`` then ``second``, the words of ``second`` numbered after those of ``first``."""
    shift = max((w for w in first.words if w is not None), default=-1) + 1
    words = [None if w is None else w + shift for w in second.words]
    labels = {**first.word_labels, **{w + shift: t for w, t in second.word_labels.items()}}
    return Tokens([*first.labels, *second.labels], [*first.words, *words], labels)


def merge(weights: np.ndarray, rows: Tokens | None, cols: Tokens | None) -> np.ndarray:
    """(..., T, S) -> (..., T', S'): the columns of each word of ``cols`` summed, the rows of each
    word of ``rows`` averaged (None: that axis as it is)."""
    out = np.asarray(weights, dtype=np.float64)
    if cols is not None:
        out = np.stack([out[..., unit].sum(-1) for unit in cols.units()], axis=-1)
    if rows is not None:
        out = np.stack([out[..., unit, :].mean(-2) for unit in rows.units()], axis=-2)
    return out
