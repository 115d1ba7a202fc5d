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
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path
from typing import Protocol

from attnkit.errors import CheckpointError


class Tokenizer(Protocol):
    kind: str

    def tokenize(self, text: str) -> list[str]: ...

    def detokenize(self, tokens: Sequence[str]) -> str: ...

    def to_json(self) -> dict: ...


class CharTokenizer:
    """One token per character; spaces are tokens too, so detokenizing is joining."""

    kind = "char"

    def __init__(self, lowercase: bool = False):
        self.lowercase = lowercase

    def tokenize(self, text: str) -> list[str]:
        return list(text.lower() if self.lowercase else text)

    def detokenize(self, tokens: Sequence[str]) -> str:
        return "".join(tokens)

    def to_json(self) -> dict:
        return {"kind": self.kind, "lowercase": self.lowercase}


class WhitespaceTokenizer:
    """Whitespace-separated tokens, for pre-tokenized text (phones in G2P targets, Moses
    output); detokenizing joins them with one space."""

    kind = "whitespace"

    def __init__(self, lowercase: bool = False):
        self.lowercase = lowercase

    def tokenize(self, text: str) -> list[str]:
        return (text.lower() if self.lowercase else text).split()

    def detokenize(self, tokens: Sequence[str]) -> str:
        return " ".join(tokens)

    def to_json(self) -> dict:
        return {"kind": self.kind, "lowercase": self.lowercase}


class MosesTokenizer:
    """Words with punctuation split off by sacremoses (the Moses tokenizer of ``lang``; no XML
    escaping), and output put back together by its detokenizer: ``"Ein Hut, rot."`` ->
    ``Ein Hut , rot .`` -> ``"Ein Hut, rot."``."""

    kind = "moses"

    def __init__(self, lowercase: bool = False, lang: str = "en"):
        from sacremoses import MosesDetokenizer
        from sacremoses import MosesTokenizer as Moses

        self.lowercase, self.lang = lowercase, lang
        self._tokenizer, self._detokenizer = Moses(lang=lang), MosesDetokenizer(lang=lang)

    def tokenize(self, text: str) -> list[str]:
        text = text.lower() if self.lowercase else text
        return self._tokenizer.tokenize(text, escape=False)

    def detokenize(self, tokens: Sequence[str]) -> str:
        return self._detokenizer.detokenize(list(tokens), unescape=False)

    def to_json(self) -> dict:
        return {"kind": self.kind, "lowercase": self.lowercase, "lang": self.lang}


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


#: a saved tokenizer's ``kind`` -> (its JSON, the checkpoint directory) -> the tokenizer;
#: ``word`` is what checkpoints recorded before ``word`` split punctuation: a whitespace split
FROM_JSON = {
    "char": lambda obj, _: CharTokenizer(_lowercase(obj)),
    "whitespace": lambda obj, _: WhitespaceTokenizer(_lowercase(obj)),
    "word": lambda obj, _: WhitespaceTokenizer(_lowercase(obj)),
    "moses": lambda obj, _: MosesTokenizer(_lowercase(obj), _language(obj)),
    "sentencepiece": _sentencepiece,
}


def tokenizer_from_json(obj: dict, directory: Path | None = None) -> Tokenizer:
    """Rebuild a tokenizer saved with ``to_json`` (``directory`` holds any model file it names)."""
    kind = obj.get("kind") if isinstance(obj, dict) else None
    if kind not in FROM_JSON:
        known = ", ".join(k for k in FROM_JSON if k != "word")
        raise CheckpointError(f"unknown tokenizer kind {kind!r} (expected {known})")
    return FROM_JSON[kind](obj, directory)
