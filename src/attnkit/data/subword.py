"""Subword tokenization with sentencepiece (BPE or unigram).

A trained model is one binary ``<name>.model`` file. Tokens are the model's
pieces (``"▁Ein"``, ``"e"``, ...); attnkit builds its own :class:`Vocab` from
them, so sentencepiece's own ids (and its pad/unk/bos/eos ids) never reach a
model. Normalization is the identity, so for text without leading, trailing
or repeated spaces ``detokenize(tokenize(s)) == s`` exactly, which is what
BLEU against raw references needs; characters never seen in training come
back as themselves (attnkit's Vocab maps them to ``<unk>``).
"""

from __future__ import annotations

import io
import os
from collections.abc import Iterable, Sequence
from pathlib import Path

import sentencepiece as spm

from attnkit.data.tokenizers import normal_form_of, normalized
from attnkit.errors import CheckpointError, ConfigError, DataError

_MODEL_TYPES = ("bpe", "unigram", "char", "word")
_SPACE = "\u2581"  # sentencepiece's word-boundary mark


class SentencePieceTokenizer:
    """Text <-> sentencepiece pieces, backed by ``<name>.model`` in some directory."""

    kind = "sentencepiece"

    def __init__(
        self, model_file: str | Path, model_proto: bytes | None = None, normalize: str | None = None
    ):
        """Load ``model_file`` (or, when given, the already-read ``model_proto`` bytes that it
        holds); text is brought to the Unicode form ``normalize`` (None: as it comes) first."""
        self.model_file, self.normalize = Path(model_file), normalize
        try:
            if model_proto is None:
                model_proto = self.model_file.read_bytes()
            self._sp = spm.SentencePieceProcessor(model_proto=model_proto)
        except OSError as exc:
            raise CheckpointError(
                f"{self.model_file}: cannot read sentencepiece model ({exc.strerror or exc})"
            ) from None
        except (RuntimeError, TypeError, ValueError) as exc:
            raise CheckpointError(
                f"{self.model_file}: not a valid sentencepiece model ({exc})"
            ) from None
        self._proto = bytes(model_proto)

    @classmethod
    def train(
        cls,
        texts: Iterable[str],
        directory: str | Path,
        name: str,
        vocab_size: int = 8000,
        model_type: str = "bpe",
        character_coverage: float = 1.0,
        normalize: str | None = None,
    ) -> SentencePieceTokenizer:
        """Train on ``texts`` (one sentence each) in memory and write ``directory/<name>.model``.

        ``vocab_size`` is an upper bound: a small corpus yields fewer pieces
        instead of an error. Training is deterministic (one thread, fixed
        seed, no sampling of the input). No temporary files are left behind.
        """
        if model_type not in _MODEL_TYPES:
            raise ConfigError(
                f"unknown sentencepiece model_type {model_type!r} (expected one of {_MODEL_TYPES})"
            )
        if not name or Path(name).name != name:
            raise ConfigError(f"sentencepiece model name must be a plain file name, got {name!r}")
        sentences = [t for t in (normalized(str(t), normalize).strip() for t in texts) if t]
        if not sentences:
            raise DataError("no non-empty text to train a sentencepiece model on")
        if hasattr(spm, "set_random_generator_seed"):
            spm.set_random_generator_seed(1234)
        proto = io.BytesIO()
        try:
            spm.SentencePieceTrainer.train(
                sentence_iterator=iter(sentences),
                model_writer=proto,
                vocab_size=int(vocab_size),
                model_type=model_type,
                character_coverage=float(character_coverage),
                hard_vocab_limit=False,
                normalization_rule_name="identity",
                num_threads=1,
                input_sentence_size=0,
                shuffle_input_sentence=False,
                minloglevel=2,
            )
        except RuntimeError as exc:
            raise ConfigError(f"sentencepiece training failed ({exc})") from None
        directory = Path(directory)
        directory.mkdir(parents=True, exist_ok=True)
        path = directory / f"{name}.model"
        _write_atomic(path, proto.getvalue())
        return cls(path, proto.getvalue(), normalize)

    def tokenize(self, text: str) -> list[str]:
        """``"Ein Hund."`` -> ``["▁Ein", "▁Hund", "."]`` (pieces; ``▁`` marks a preceding space)."""
        return list(self._sp.encode(normalized(text, self.normalize), out_type=str))

    def detokenize(self, tokens: Sequence[str]) -> str:
        """Pieces -> text: the inverse of :meth:`tokenize` on normal text.

        Joins the pieces and turns each ``▁`` into a space (dropping the one
        that starts the text), as sentencepiece does, but keeps any token the
        model does not know (``"<unk>"`` from a Vocab) as it is.
        """
        text = "".join(tokens).replace(_SPACE, " ")
        return text[1:] if text.startswith(" ") else text

    @property
    def model_proto(self) -> bytes:
        """The serialized sentencepiece model (two tokenizers split alike when these bytes are
        equal)."""
        return self._proto

    def pieces(self) -> list[str]:
        """Every ordinary piece of the model (sentencepiece's control and unknown pieces left
        out)."""
        sp = self._sp
        return [
            sp.id_to_piece(i)
            for i in range(sp.get_piece_size())
            if not (sp.is_control(i) or sp.is_unknown(i) or sp.is_unused(i))
        ]

    def __len__(self) -> int:
        return self._sp.get_piece_size()

    def to_json(self) -> dict:
        """``{"kind": "sentencepiece", "model_file": "<name>.model"}``; the name is relative to the
        checkpoint directory (and the Unicode form text is brought to first)."""
        return {"kind": self.kind, "model_file": self.model_file.name, "normalize": self.normalize}

    @classmethod
    def from_json(cls, obj: dict, directory: str | Path | None) -> SentencePieceTokenizer:
        """Rebuild from :meth:`to_json` output; ``directory`` holds the model file it names."""
        model_file = obj.get("model_file") if isinstance(obj, dict) else None
        if not isinstance(model_file, str) or not model_file or Path(model_file).name != model_file:
            raise CheckpointError(
                f"sentencepiece tokenizer entry needs a plain 'model_file' name, got {model_file!r}"
            )
        if directory is None:
            raise CheckpointError(
                f"sentencepiece model {model_file!r}: no checkpoint directory given to read it from"
            )
        path = Path(directory) / model_file
        if not path.is_file():
            raise CheckpointError(f"{path}: sentencepiece model file is missing")
        return cls(path, normalize=normal_form_of(obj))

    def copy_to(self, directory: str | Path) -> None:
        """Write this model's file into ``directory`` under the same name (for saving a
        checkpoint)."""
        directory = Path(directory)
        directory.mkdir(parents=True, exist_ok=True)
        _write_atomic(directory / self.model_file.name, self._proto)


def _write_atomic(path: Path, data: bytes) -> None:
    tmp = path.with_name(path.name + ".tmp")
    try:
        tmp.write_bytes(data)
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)
