"""End-to-end memory network (MemN2N, Sukhbaatar, Szlam, Weston & Fergus, NIPS 2015).

A question ``u`` reads a memory of sentences K times (hops); each hop attends over the memories
(:mod:`attnkit.attention.memory`) and adds what it read to ``u``; the answer is a softmax over
the vocabulary of the last state::

    u_1 = B q                    m_i^k = A^k x_i + T_A^k(i)      c_i^k = C^k x_i + T_C^k(i)
    p^k = softmax(u_k . m^k)     o_k = sum_i p_i^k c_i^k         u_{k+1} = u_k + o_k
    answer = softmax(W u_{K+1})

A sentence ``x_i`` becomes a vector as the sum of its word embeddings weighted by the position
encoding (``encoding: position``, the paper's formula; ``position_centred``, its reference
code's, :func:`~attnkit.attention.memory.position_encoding`) or not (``bow``); ``T(i)`` is
the temporal encoding, a learned vector per memory age (the latest fact is age 0). How the
matrices are shared is ``memory:`` (:data:`MEMORIES`):

- ``adjacent``: A^{k+1} = C^k, B = A^1, W^T = C^K (K + 1 embeddings in all);
- ``layerwise``: one A and one C for every hop, and ``u_{k+1} = H u_k + o_k``;
- ``key_value``: keys and values embedded apart (Miller et al. 2016): the keys by the
  question's own embedding A, the values by V, and ``u_{k+1} = R_k (u_k + o_k)`` -- attention
  with a query, keys and values, as in a Transformer.

*Linear start* (the buffer ``linear``: True) leaves the softmax out of every hop; training
turns it on after a few epochs. ``empty_slots``: the slots of a batch's M that hold no sentence
(past a question's facts, or inserted by random noise) are masked out of each hop's softmax, or
(``zero``, the paper's reference code) scored as zero vectors with no temporal vector: the weight
they take is the hop's way of reading nothing, and the weights over the facts then sum to less
than 1. Shapes: B batch, M memories, L words a memory, Lq words a question, D width,
V vocabulary, K hops.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

import torch
from torch import Tensor, nn

from attnkit.attention.memory import address, position_encoding, read
from attnkit.errors import ConfigError


@dataclass
class MemN2NConfig:
    """``model:`` of a memory-network experiment."""

    hops: int = 3  # K: reads of the memory
    dim: int = 20  # D: embedding width (the paper: 20 per task, 50 jointly)
    # how words add up to a sentence: position (the paper's formula), position_centred (its
    # reference code's), bow
    encoding: str = "position"
    temporal: bool = True  # a learned vector per memory age
    memory: str = "adjacent"  # how hops share matrices: adjacent | layerwise | key_value
    noise: float = 0.1  # random noise: empty memories added in training, per fact
    init_std: float = 0.1  # the weights' initial normal deviation
    # memory slots holding no sentence: masked (out of every hop's softmax) or zero (in it, as
    # zero vectors scored 0, as in the paper's reference code: a hop can rest on nothing)
    empty_slots: str = "masked"

    CHOICES = {
        "encoding": ("position", "position_centred", "bow"),
        "memory": ("adjacent", "layerwise", "key_value"),
        "empty_slots": ("masked", "zero"),
    }

    def validate(self, where: str) -> None:
        if not 1 <= self.hops <= 20:
            raise ConfigError(f"{where}.hops: {self.hops} is not in 1..20")
        if not 1 <= self.dim <= 4096:
            raise ConfigError(f"{where}.dim: {self.dim} is not in 1..4096")
        if not 0 <= self.noise <= 1:
            raise ConfigError(f"{where}.noise: {self.noise} is not in 0..1")
        if not self.init_std > 0:
            raise ConfigError(f"{where}.init_std: {self.init_std} must be above 0")


class Words(NamedTuple):
    """Sentences' word ids (..., L) and the weights of their words (..., L, D): the position
    encoding, or None (bag of words: each word counts once); ``gates`` (...): a factor on each
    sentence's vector (None: 1), what gradient saliency differentiates."""

    ids: Tensor
    weights: Tensor | None
    gates: Tensor | None = None


def words_of(ids: Tensor, encoding: str, dim: int, gates: Tensor | None = None) -> Words:
    """``ids`` (..., L) with the weights of ``encoding`` (position | position_centred | bow),
    computed once for every hop."""
    if encoding == "bow":
        return Words(ids, None, gates)
    centred = encoding == "position_centred"
    return Words(ids, position_encoding((ids != 0).sum(-1), ids.size(-1), dim, centred), gates)


class MemOutput(NamedTuple):
    logits: Tensor  # (B, V) the answer's scores
    attention: Tensor  # (B, K, M) each hop's weights over the memories


def _embedding(vocab: int, dim: int, std: float) -> nn.Embedding:
    """Word embeddings whose id 0 (the empty word) is and stays the zero vector."""
    emb = nn.Embedding(vocab, dim, padding_idx=0)
    nn.init.normal_(emb.weight, std=std)
    with torch.no_grad():
        emb.weight[0].zero_()
    return emb


def _ages(counts: Tensor, m: int) -> Tensor:
    """(B, M) each memory's age: 0 for the latest fact of a question, counting back."""
    positions = torch.arange(m, device=counts.device)
    return (counts[:, None] - 1 - positions).clamp(min=0)


class _Shared(nn.Module):
    """What every way of sharing needs: the sentence encoding and the temporal vectors."""

    def __init__(self, cfg: MemN2NConfig, memory_size: int):
        super().__init__()
        self.cfg, self.memory_size = cfg, memory_size

    def temporal(self, n: int) -> nn.ParameterList:
        """``n`` tables (M, D) of temporal vectors (none without ``temporal``)."""
        return nn.ParameterList(
            nn.Parameter(torch.randn(self.memory_size, self.cfg.dim) * self.cfg.init_std)
            for _ in range(n if self.cfg.temporal else 0)
        )

    def sentences(self, emb: nn.Embedding, words: Words) -> Tensor:
        """(..., L) word ids -> (..., D): the weighted sum of their embeddings."""
        vectors = emb(words.ids)  # (..., L, D)
        if words.weights is not None:
            vectors = vectors * words.weights
        summed = vectors.sum(-2)  # (..., D)
        return summed if words.gates is None else summed * words.gates[..., None]

    def with_time(self, memories: Tensor, table: nn.ParameterList, hop: int, ages: Tensor):
        """``memories`` (B, M, D) plus the temporal vector of each one's age."""
        if not self.cfg.temporal:
            return memories
        return memories + table[hop][ages]  # (B, M, D)


class AdjacentTying(_Shared):
    """K + 1 embeddings: B = E_0, A^k = E_{k-1}, C^k = E_k, W^T = E_K."""

    def __init__(self, cfg: MemN2NConfig, vocab: int, memory_size: int):
        super().__init__(cfg, memory_size)
        self.embed = nn.ModuleList(
            _embedding(vocab, cfg.dim, cfg.init_std) for _ in range(cfg.hops + 1)
        )
        self.time = self.temporal(cfg.hops + 1)

    def query(self, queries: Words) -> Tensor:
        return self.sentences(self.embed[0], queries)

    def memories(self, stories: Words, ages: Tensor) -> list[tuple[Tensor, Tensor]]:
        embedded = [
            self.with_time(self.sentences(emb, stories), self.time, k, ages)
            for k, emb in enumerate(self.embed)
        ]  # K + 1 of (B, M, D): hop k reads keys k and values k + 1
        return list(zip(embedded[:-1], embedded[1:], strict=True))

    def update(self, hop: int, u: Tensor, o: Tensor) -> Tensor:
        return u + o

    def answer(self, u: Tensor) -> Tensor:
        return u @ self.embed[-1].weight.t()  # (B, V)


class LayerwiseTying(_Shared):
    """One A and one C for every hop, B and W apart, ``u_{k+1} = H u_k + o_k``."""

    def __init__(self, cfg: MemN2NConfig, vocab: int, memory_size: int):
        super().__init__(cfg, memory_size)
        self.embed_a, self.embed_b, self.embed_c = (
            _embedding(vocab, cfg.dim, cfg.init_std) for _ in range(3)
        )
        self.time = self.temporal(2)
        self.h = nn.Linear(cfg.dim, cfg.dim, bias=False)
        self.w = nn.Linear(cfg.dim, vocab, bias=False)
        for linear in (self.h, self.w):
            nn.init.normal_(linear.weight, std=cfg.init_std)

    def query(self, queries: Words) -> Tensor:
        return self.sentences(self.embed_b, queries)

    def memories(self, stories: Words, ages: Tensor) -> list[tuple[Tensor, Tensor]]:
        keys = self.with_time(self.sentences(self.embed_a, stories), self.time, 0, ages)
        values = self.with_time(self.sentences(self.embed_c, stories), self.time, 1, ages)
        return [(keys, values)] * self.cfg.hops  # the same memory at every hop

    def update(self, hop: int, u: Tensor, o: Tensor) -> Tensor:
        return self.h(u) + o

    def answer(self, u: Tensor) -> Tensor:
        return self.w(u)


class KeyValueMemory(_Shared):
    """Keys embedded as the question is (A), values apart (V); ``u_{k+1} = R_k(u_k + o_k)``."""

    def __init__(self, cfg: MemN2NConfig, vocab: int, memory_size: int):
        super().__init__(cfg, memory_size)
        self.embed_key = _embedding(vocab, cfg.dim, cfg.init_std)
        self.embed_value = _embedding(vocab, cfg.dim, cfg.init_std)
        self.time = self.temporal(2)
        self.r = nn.ModuleList(nn.Linear(cfg.dim, cfg.dim, bias=False) for _ in range(cfg.hops))
        self.w = nn.Linear(cfg.dim, vocab, bias=False)
        for linear in (*self.r, self.w):
            nn.init.normal_(linear.weight, std=cfg.init_std)

    def query(self, queries: Words) -> Tensor:
        return self.sentences(self.embed_key, queries)

    def memories(self, stories: Words, ages: Tensor) -> list[tuple[Tensor, Tensor]]:
        keys = self.with_time(self.sentences(self.embed_key, stories), self.time, 0, ages)
        values = self.with_time(self.sentences(self.embed_value, stories), self.time, 1, ages)
        return [(keys, values)] * self.cfg.hops  # the same memory at every hop

    def update(self, hop: int, u: Tensor, o: Tensor) -> Tensor:
        return self.r[hop](u + o)

    def answer(self, u: Tensor) -> Tensor:
        return self.w(u)


#: ``model.memory`` -> how the hops share their matrices
MEMORIES = {"adjacent": AdjacentTying, "layerwise": LayerwiseTying, "key_value": KeyValueMemory}


class MemN2N(nn.Module):
    """The memory network over a vocabulary of ``vocab`` words and ``memory_size`` memories."""

    def __init__(self, cfg: MemN2NConfig, vocab: int, memory_size: int):
        super().__init__()
        self.cfg, self.vocab, self.memory_size = cfg, vocab, memory_size
        self.weights = MEMORIES[cfg.memory](cfg, vocab, memory_size)
        self.register_buffer("linear", torch.tensor(False))  # linear start: no softmax

    def forward(
        self, stories: Tensor, counts: Tensor, queries: Tensor, gates: Tensor | None = None
    ) -> MemOutput:
        """``stories`` (B, M, L) word ids, ``counts`` (B,) memories each question has,
        ``queries`` (B, Lq) -> answer logits (B, V) and attention (B, K, M). ``gates`` (B, M):
        a factor on each memory's content (1: as it is; 0: an empty sentence), for saliency."""
        w = self.weights
        m = stories.size(1)
        mask = torch.arange(m, device=counts.device)[None, :] < counts[:, None]  # (B, M)
        ages = _ages(counts, m)
        linear = bool(self.linear)
        held = None
        if self.cfg.empty_slots == "zero":  # every slot is scored; the empty ones read as 0
            held = (mask & (stories != 0).any(-1)).unsqueeze(-1)  # (B, M, 1)
            mask = torch.ones_like(mask)
        stories = words_of(stories, self.cfg.encoding, self.cfg.dim, gates)  # (B, M, L[, D])
        u = w.query(words_of(queries, self.cfg.encoding, self.cfg.dim))  # (B, D)
        weights = []
        for hop, (keys, values) in enumerate(w.memories(stories, ages)):  # (B, M, D) each
            if held is not None:  # no temporal vector either: a slot of nothing
                keys, values = keys * held, values * held
            p = address(u, keys, mask, linear)  # (B, M)
            u = w.update(hop, u, read(p, values))
            weights.append(p)
        return MemOutput(w.answer(u), torch.stack(weights, 1))
