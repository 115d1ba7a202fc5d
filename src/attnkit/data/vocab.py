"""Token <-> id mapping with the four special tokens every model uses."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable, Sequence
from pathlib import Path

from attnkit.config import read_text_bounded
from attnkit.errors import CheckpointError, InputError

PAD, UNK, BOS, EOS = "<pad>", "<unk>", "<s>", "</s>"
SPECIALS = (PAD, UNK, BOS, EOS)
PAD_ID, UNK_ID, BOS_ID, EOS_ID = 0, 1, 2, 3
#: the most bytes of a saved vocabulary file (a 100,000-token one is about 1 MB)
MAX_VOCAB_BYTES = 256 * 1024 * 1024


class Vocab:
    """A fixed token list; ids 0-3 are ``<pad> <unk> <s> </s>``.

    Tokens unseen when the vocabulary was built map to ``<unk>``.
    """

    def __init__(self, tokens: Sequence[str]):
        if tuple(tokens[: len(SPECIALS)]) != SPECIALS:
            raise ValueError(f"a vocabulary must start with {SPECIALS}")
        self.itos: list[str] = list(tokens)
        self.stoi: dict[str, int] = {t: i for i, t in enumerate(self.itos)}
        if len(self.stoi) != len(self.itos):
            raise ValueError("duplicate tokens in vocabulary")

    @classmethod
    def build(
        cls, sequences: Iterable[Sequence[str]], min_freq: int = 1, max_size: int | None = None
    ) -> Vocab:
        """Most frequent tokens first (ties broken alphabetically, so the result is
        deterministic)."""
        counts = Counter(tok for seq in sequences for tok in seq)
        for special in SPECIALS:
            counts.pop(special, None)
        ranked = sorted(
            (t for t, c in counts.items() if c >= min_freq), key=lambda t: (-counts[t], t)
        )
        if max_size is not None:
            ranked = ranked[: max(0, max_size - len(SPECIALS))]
        return cls(list(SPECIALS) + ranked)

    def __len__(self) -> int:
        return len(self.itos)

    def encode(
        self, tokens: Sequence[str], add_bos: bool = False, add_eos: bool = False
    ) -> list[int]:
        ids = [self.stoi.get(t, UNK_ID) for t in tokens]
        if add_bos:
            ids = [BOS_ID] + ids
        if add_eos:
            ids = ids + [EOS_ID]
        return ids

    def decode(self, ids: Iterable[int], strip_specials: bool = True) -> list[str]:
        """Ids -> tokens, stopping at the first ``</s>`` when ``strip_specials``."""
        out = []
        for i in ids:
            i = int(i)
            if strip_specials:
                if i == EOS_ID:
                    break
                if i in (PAD_ID, BOS_ID):
                    continue
            out.append(self.itos[i] if 0 <= i < len(self.itos) else UNK)
        return out

    def to_json(self) -> dict:
        return {"tokens": self.itos}

    @classmethod
    def from_json(cls, obj: dict, source: str = "vocabulary") -> Vocab:
        try:
            return cls(obj["tokens"])
        except (KeyError, TypeError, ValueError) as exc:
            raise CheckpointError(f"{source}: not an attnkit vocabulary ({exc})") from None

    def save(self, path: Path) -> None:
        Path(path).write_text(json.dumps(self.to_json(), ensure_ascii=False), encoding="utf-8")

    @classmethod
    def load(cls, path: Path) -> Vocab:
        try:
            text = read_text_bounded(path, MAX_VOCAB_BYTES, CheckpointError, regular=True)
            obj = json.loads(text)
        except (RecursionError, json.JSONDecodeError) as exc:
            reason = "nested too deeply" if isinstance(exc, RecursionError) else exc
            raise CheckpointError(f"{path}: cannot read vocabulary ({reason})") from None
        return cls.from_json(obj, source=str(path))


def target_prefix_ids(vocab: Vocab, prefix: Sequence[str]) -> list[int]:
    """Target token strings -> ids; an :class:`InputError` naming the first one (``prefix[i]``)
    the target vocabulary does not hold (special tokens included: a prefix holds output tokens
    only)."""
    ids = []
    for i, token in enumerate(prefix):
        index = vocab.stoi.get(token)
        if index is None or token in SPECIALS:
            raise InputError(
                f"prefix[{i}]: {token!r} is not a token of the target vocabulary"
                + (" (special tokens cannot be forced)" if token in SPECIALS else ""),
                f"prefix[{i}]",
            )
        ids.append(index)
    return ids
