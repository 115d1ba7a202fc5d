"""Text <-> token lists.

Every tokenizer has ``kind``, ``tokenize(text) -> list[str]``,
``detokenize(tokens) -> str`` and ``to_json() -> dict``; ``tokenizer_from_json``
rebuilds one from that dict (and the checkpoint directory, for tokenizers with
a model file). Subword tokenizers live in :mod:`attnkit.data.subword`.
"""

from __future__ import annotations

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


class WordTokenizer:
    """Whitespace-separated tokens (words, or phones in G2P targets)."""

    kind = "word"

    def __init__(self, lowercase: bool = False):
        self.lowercase = lowercase

    def tokenize(self, text: str) -> list[str]:
        return (text.lower() if self.lowercase else text).split()

    def detokenize(self, tokens: Sequence[str]) -> str:
        return " ".join(tokens)

    def to_json(self) -> dict:
        return {"kind": self.kind, "lowercase": self.lowercase}


def tokenizer_from_json(obj: dict, directory: Path | None = None) -> Tokenizer:
    """Rebuild a tokenizer saved with ``to_json`` (``directory`` holds any model file it names)."""
    kind = obj.get("kind") if isinstance(obj, dict) else None
    if kind == "char":
        return CharTokenizer(lowercase=bool(obj.get("lowercase", False)))
    if kind == "word":
        return WordTokenizer(lowercase=bool(obj.get("lowercase", False)))
    if kind == "sentencepiece":
        from attnkit.data.subword import SentencePieceTokenizer

        return SentencePieceTokenizer.from_json(obj, directory)
    raise CheckpointError(f"unknown tokenizer kind {kind!r} (expected char, word or sentencepiece)")
