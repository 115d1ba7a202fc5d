"""bAbI questions as tensors for a memory network: word ids of memories, questions, answers.

:class:`BabiVocab` holds the words (id 0 is the empty word: padding, and words a model never saw)
and the shapes every batch is padded to; :meth:`BabiVocab.encode` turns questions into a
:class:`QABatch`:

    stories     (N, M, L)  word ids of each memory (M memories of L words, 0-padded)
    counts      (N,)       memories a question has (the rest of M are empty, masked)
    queries     (N, Lq)    word ids of the question
    answers     (N,)       the answer's id
    supporting  (N, M)     True where a memory is a supporting fact

Memories keep the story's order (the oldest first). :func:`add_noise` inserts empty memories at
random places (the paper's *random noise*, which jitters the temporal encoding in training).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch
from torch import Tensor

from attnkit.data.babi import Question, words
from attnkit.errors import CheckpointError

PAD = "<empty>"


@dataclass
class QABatch:
    """Questions as tensors (shapes in the module's docstring)."""

    stories: Tensor
    counts: Tensor
    queries: Tensor
    answers: Tensor
    supporting: Tensor

    def __len__(self) -> int:
        return len(self.answers)

    def take(self, index: Tensor) -> QABatch:
        """The questions ``index`` (B,) picks."""
        return QABatch(*(t[index] for t in self.tensors()))

    def tensors(self) -> tuple[Tensor, ...]:
        return self.stories, self.counts, self.queries, self.answers, self.supporting

    def to(self, device: torch.device) -> QABatch:
        return QABatch(*(t.to(device) for t in self.tensors()))


@dataclass
class BabiVocab:
    """The words of the training questions (id 0: the empty word) and the padded shapes."""

    tokens: list[str]
    sentence_words: int  # L: words of the longest memory
    query_words: int  # Lq: words of the longest question
    memory_size: int  # M

    @classmethod
    def build(cls, questions: Sequence[Question], memory_size: int) -> BabiVocab:
        """The vocabulary of ``questions`` (their memories, questions and answers), sorted."""
        seen: set[str] = set()
        longest, longest_q = 1, 1
        for q in questions:
            for memory in q.memories:
                found = words(memory)
                seen.update(found)
                longest = max(longest, len(found))
            found = words(q.question)
            seen.update(found)
            longest_q = max(longest_q, len(found))
            seen.add(q.answer)
        return cls([PAD, *sorted(seen)], longest, longest_q, memory_size)

    def __post_init__(self) -> None:
        self.ids = {token: i for i, token in enumerate(self.tokens)}

    def __len__(self) -> int:
        return len(self.tokens)

    def to_json(self) -> dict:
        return {
            "tokens": self.tokens,
            "sentence_words": self.sentence_words,
            "query_words": self.query_words,
            "memory_size": self.memory_size,
        }

    @classmethod
    def from_json(cls, data, where: str) -> BabiVocab:
        """The vocabulary a checkpoint saved; CheckpointError naming ``where`` if malformed."""
        keys = ("tokens", "sentence_words", "query_words", "memory_size")
        if not isinstance(data, dict) or set(data) != set(keys):
            raise CheckpointError(f"{where}: expected the keys {', '.join(keys)}")
        tokens = data["tokens"]
        if (
            not isinstance(tokens, list)
            or not tokens
            or tokens[0] != PAD
            or not all(isinstance(t, str) for t in tokens)
            or len(set(tokens)) != len(tokens)
        ):
            raise CheckpointError(f"{where}: tokens must be distinct strings, {PAD!r} first")
        for key in keys[1:]:
            value = data[key]
            if not isinstance(value, int) or isinstance(value, bool) or not 1 <= value <= 10_000:
                raise CheckpointError(f"{where}: {key} must be an integer in 1..10000")
        return cls(tokens, data["sentence_words"], data["query_words"], data["memory_size"])

    def word_ids(self, text: str, width: int) -> tuple[list[int], list[str]]:
        """The ids of ``text``'s first ``width`` words, 0-padded; and its words the vocabulary
        lacks (read as the empty word)."""
        found = words(text)[:width]
        unknown = [w for w in found if w not in self.ids]
        ids = [self.ids.get(w, 0) for w in found]
        return ids + [0] * (width - len(ids)), unknown

    def encode(self, questions: Sequence[Question]) -> QABatch:
        """``questions`` as a :class:`QABatch` (memories beyond ``memory_size``: the latest
        kept; words beyond the shapes: cut; unknown words and answers: id 0)."""
        n, m, length = len(questions), self.memory_size, self.sentence_words
        stories = torch.zeros(n, m, length, dtype=torch.long)
        counts = torch.zeros(n, dtype=torch.long)
        queries = torch.zeros(n, self.query_words, dtype=torch.long)
        answers = torch.zeros(n, dtype=torch.long)
        supporting = torch.zeros(n, m, dtype=torch.bool)
        for i, q in enumerate(questions):
            memories = q.memories[-m:]
            shift = len(q.memories) - len(memories)
            for j, memory in enumerate(memories):
                stories[i, j] = torch.tensor(self.word_ids(memory, length)[0])
            counts[i] = len(memories)
            queries[i] = torch.tensor(self.word_ids(q.question, self.query_words)[0])
            answers[i] = self.ids.get(q.answer, 0)
            for s in q.supporting:
                if 0 <= s - shift < m:
                    supporting[i, s - shift] = True
        return QABatch(stories, counts, queries, answers, supporting)


def add_noise(batch: QABatch, rate: float, generator: torch.Generator) -> QABatch:
    """``batch`` with empty memories inserted at random places: each question gets
    ``round(rate * count)`` of them (as many as fit in M), its facts keeping their order.
    Supporting marks move with their facts."""
    if rate <= 0:
        return batch
    n, m, _ = batch.stories.shape
    counts, device = batch.counts, batch.stories.device
    totals = torch.minimum(
        counts + torch.round(rate * counts.float()).long(), torch.tensor(m, device=device)
    )
    slot = torch.arange(m, device=device)[None, :]  # (1, M)
    # the facts take the `count` slots of lowest random key among the first `total` slots; the
    # keys are drawn by the (CPU) generator, so a run draws alike on CPU and GPU
    keys = torch.rand(n, m, generator=generator).to(device)
    keys = keys.masked_fill(slot >= totals[:, None], 2.0)
    chosen = keys.argsort(1)  # (N, M): slots by key
    is_fact = slot < counts[:, None]  # (N, M): the first `count` of them hold the facts
    slots = chosen.masked_fill(~is_fact, m).sort(1).values  # (N, M): fact j's slot, in order
    rows = torch.arange(n, device=device)[:, None].expand(n, m)[is_fact]
    targets = slots[is_fact]
    stories = torch.zeros_like(batch.stories)
    supporting = torch.zeros_like(batch.supporting)
    stories[rows, targets] = batch.stories[is_fact]
    supporting[rows, targets] = batch.supporting[is_fact]
    return QABatch(stories, totals, batch.queries, batch.answers, supporting)
