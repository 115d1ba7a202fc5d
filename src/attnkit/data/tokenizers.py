"""Text <-> token lists.

Every tokenizer has ``kind``, ``tokenize(text) -> list[str]``,
``detokenize(tokens) -> str`` and ``to_json() -> dict``; ``tokenizer_from_json``
rebuilds one from that dict (and the checkpoint directory, for tokenizers with
a model file). Subword tokenizers live in :mod:`attnkit.data.subword`.

The levels a config names (``data.src_level``, ``data.tgt_level``) and the tokenizers they make:

* ``char``: :class:`CharTokenizer`, one token per character;
* ``word``: :class:`MosesTokenizer`, words with punctuation split off by sacremoses (the Moses
  tokenizer's rules) and output detokenized by the same rules (``"Hut,"`` -> ``Hut`` ``,``);
* ``whitespace``: :class:`WhitespaceTokenizer`, for text already tokenized (phones, Moses
  output): tokens are what whitespace separates;
* ``sentencepiece``: subwords (:mod:`attnkit.data.subword`).

Checkpoints written before ``word`` split punctuation recorded ``{"kind": "word"}``: they load
as :class:`WhitespaceTokenizer`, so they keep decoding as they did.

Every tokenizer first brings text to one Unicode normal form (``data.normalize``, NFC unless the
config says otherwise), so "é" typed as one code point or as "e" and a combining accent is one
token; the form is recorded in the tokenizer's JSON. Checkpoints written before the key recorded
none and keep reading text as it comes.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence
from pathlib import Path
from typing import Protocol

from attnkit.errors import CheckpointError


class Tokenizer(Protocol):
    kind: str

    def tokenize(self, text: str) -> list[str]: ...

    def detokenize(self, tokens: Sequence[str]) -> str: ...

    def to_json(self) -> dict: ...


NORMAL_FORMS = ("NFC", "NFD", "NFKC", "NFKD")
"""The Unicode normal forms ``data.normalize`` may name (``none``: text as it comes)."""


def normalized(text: str, form: str | None) -> str:
    """``text`` in the Unicode normal ``form`` (NFC, NFD, NFKC, NFKD), or as it is for None."""
    return unicodedata.normalize(form, text) if form else text


class _Prepares:
    """What the simple tokenizers share: the normal form and lowercasing applied before the
    split, and both recorded in ``to_json``."""

    kind = ""

    def __init__(self, lowercase: bool = False, normalize: str | None = None):
        self.lowercase, self.normalize = lowercase, normalize

    def prepare(self, text: str) -> str:
        text = normalized(text, self.normalize)
        return text.lower() if self.lowercase else text

    def to_json(self) -> dict:
        return {"kind": self.kind, "lowercase": self.lowercase, "normalize": self.normalize}


class CharTokenizer(_Prepares):
    """One token per character; spaces are tokens too, so detokenizing is joining."""

    kind = "char"

    def tokenize(self, text: str) -> list[str]:
        return list(self.prepare(text))

    def detokenize(self, tokens: Sequence[str]) -> str:
        return "".join(tokens)


class WhitespaceTokenizer(_Prepares):
    """Whitespace-separated tokens, for pre-tokenized text (phones in G2P targets, Moses
    output); detokenizing joins them with one space."""

    kind = "whitespace"

    def tokenize(self, text: str) -> list[str]:
        return self.prepare(text).split()

    def detokenize(self, tokens: Sequence[str]) -> str:
        return " ".join(tokens)


class MosesTokenizer(_Prepares):
    """Words with punctuation split off by sacremoses (the Moses tokenizer of ``lang``; no XML
    escaping), and output put back together by its detokenizer: ``"Ein Hut, rot."`` ->
    ``Ein Hut , rot .`` -> ``"Ein Hut, rot."``."""

    kind = "moses"

    def __init__(self, lowercase: bool = False, normalize: str | None = None, lang: str = "en"):
        from sacremoses import MosesDetokenizer
        from sacremoses import MosesTokenizer as Moses

        super().__init__(lowercase, normalize)
        self.lang = lang
        self._tokenizer, self._detokenizer = Moses(lang=lang), MosesDetokenizer(lang=lang)

    def tokenize(self, text: str) -> list[str]:
        return self._tokenizer.tokenize(self.prepare(text), escape=False)

    def detokenize(self, tokens: Sequence[str]) -> str:
        return self._detokenizer.detokenize(list(tokens), unescape=False)

    def to_json(self) -> dict:
        return {**super().to_json(), "lang": self.lang}


def _sentencepiece(obj: dict, directory: Path | None) -> Tokenizer:
    from attnkit.data.subword import SentencePieceTokenizer

    return SentencePieceTokenizer.from_json(obj, directory)


def _language(obj: dict) -> str:
    """A saved Moses tokenizer's language: a code of 2 or 3 letters (it names a file of
    sacremoses' data, so nothing else is taken)."""
    lang = obj.get("lang", "en")
    if not (isinstance(lang, str) and re.fullmatch(r"[a-z]{2,3}", lang)):
        raise CheckpointError(f"moses tokenizer: lang {lang!r} is not a language code like 'en'")
    return lang


def _lowercase(obj: dict) -> bool:
    return bool(obj.get("lowercase", False))


def normal_form_of(obj: dict) -> str | None:
    """A saved tokenizer's normal form: one of :data:`NORMAL_FORMS`, or None (saved before the
    key, or ``none``)."""
    form = obj.get("normalize")
    if form is not None and form not in NORMAL_FORMS:
        shown = form if isinstance(form, str) and len(form) <= 12 else type(form).__name__
        raise CheckpointError(
            f"tokenizer normalize {shown!r} is not a Unicode normal form "
            f"({', '.join(NORMAL_FORMS)})"
        )
    return form


#: a saved tokenizer's ``kind`` -> (its JSON, the checkpoint directory) -> the tokenizer;
#: ``word`` is what checkpoints recorded before ``word`` split punctuation: a whitespace split
FROM_JSON = {
    "char": lambda obj, _: CharTokenizer(_lowercase(obj), normal_form_of(obj)),
    "whitespace": lambda obj, _: WhitespaceTokenizer(_lowercase(obj), normal_form_of(obj)),
    "word": lambda obj, _: WhitespaceTokenizer(_lowercase(obj), normal_form_of(obj)),
    "moses": lambda obj, _: MosesTokenizer(_lowercase(obj), normal_form_of(obj), _language(obj)),
    "sentencepiece": _sentencepiece,
}


def tokenizer_from_json(obj: dict, directory: Path | None = None) -> Tokenizer:
    """Rebuild a tokenizer saved with ``to_json`` (``directory`` holds any model file it names)."""
    kind = obj.get("kind") if isinstance(obj, dict) else None
    if kind not in FROM_JSON:
        known = ", ".join(k for k in FROM_JSON if k != "word")
        raise CheckpointError(f"unknown tokenizer kind {kind!r} (expected {known})")
    return FROM_JSON[kind](obj, directory)
