"""Text pairs -> id lists (:class:`Example`) -> padded tensors (:class:`Batch`).

Conventions every model relies on:

* a source is its token ids followed by ``EOS_ID``; ``src_lengths`` are the
  true lengths including that EOS, and positions past them hold ``PAD_ID``;
* the decoder reads ``tgt_in = BOS + target`` and is trained to predict
  ``tgt_out = target + EOS`` (same length T, same padding);
* rows of a batch are sorted longest target first (ties: longest source
  first), so a decoder can stop computing rows whose target has ended by
  taking a shorter prefix of the batch at each step; ``indices`` say which
  example each row is, so callers can restore order.

Shape legend: B batch, S source length (longest in the batch), T target
length + 1.
"""

from __future__ import annotations

import random
import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field

import torch
from torch import Tensor

from attnkit.data.copy_ids import encode_extended, source_oovs
from attnkit.data.tokenizers import Tokenizer
from attnkit.data.vocab import BOS_ID, EOS_ID, PAD_ID, Vocab
from attnkit.errors import DataError

OVERLONG_MODES = ("truncate", "error", "skip")
POOL_BATCHES = 50  # bucketing sorts by length inside pools of this many batches


@dataclass
class Example:
    """One encoded pair."""

    src: list[int]  # source ids, ending with EOS_ID
    tgt: list[int]  # target ids without BOS/EOS
    index: int  # position of the pair in the list given to encode_pairs

    @property
    def cost(self) -> int:
        """Padded positions this example needs in a batch: ``max(S, T)``."""
        return max(len(self.src), len(self.tgt) + 1)


@dataclass
class Batch:
    """Padded tensors for one batch; see the module docstring for the conventions.

    Attributes:
        src: (B, S) long, source ids ending with EOS, padded with PAD_ID.
        src_lengths: (B,) long, true source lengths including EOS.
        tgt_in: (B, T) long, ``BOS_ID + target``, padded.
        tgt_out: (B, T) long, ``target + EOS_ID``, padded.
        indices: the ``Example.index`` of each row.
    """

    src: Tensor
    src_lengths: Tensor
    tgt_in: Tensor
    tgt_out: Tensor
    indices: list[int]
    _num_target_tokens: int | None = field(default=None, repr=False)

    def to(self, device: torch.device | str) -> Batch:
        """A copy with every tensor on ``device`` (pass ``src_lengths.cpu()`` to packing)."""
        return Batch(
            src=self.src.to(device),
            src_lengths=self.src_lengths.to(device),
            tgt_in=self.tgt_in.to(device),
            tgt_out=self.tgt_out.to(device),
            indices=list(self.indices),
            _num_target_tokens=self._num_target_tokens,
        )

    @property
    def num_target_tokens(self) -> int:
        """Non-pad positions of ``tgt_out`` (targets + EOS): the loss normaliser."""
        if self._num_target_tokens is None:
            self._num_target_tokens = int((self.tgt_out != PAD_ID).sum())
        return self._num_target_tokens

    def __len__(self) -> int:
        return self.src.size(0)


def encode_pairs(
    pairs: Sequence[tuple[str, str]],
    src_tokenizer: Tokenizer,
    tgt_tokenizer: Tokenizer,
    src_vocab: Vocab,
    tgt_vocab: Vocab,
    max_src_len: int | None = None,
    max_tgt_len: int | None = None,
    overlong: str = "truncate",
    source_name: str = "data",
    copy: bool = False,
) -> list[Example]:
    """Tokenize and map pairs to ids; unknown tokens become ``UNK_ID`` (with ``copy``, for a model
    that copies, the extended ids of :mod:`attnkit.data.copy_ids`: a word the vocabulary lacks gets
    an id of its own example, on the target side where the source holds it).

    ``max_src_len`` bounds the source ids *including* EOS; ``max_tgt_len``
    bounds the target tokens (``tgt_in``/``tgt_out`` are one longer). Longer
    examples are handled by ``overlong``:

    * ``"truncate"``: cut (the source keeps its EOS), one warning with the count;
    * ``"skip"``: drop them, one warning with the count;
    * ``"error"``: DataError naming ``source_name`` and the 1-based example.

    An empty source or target after tokenization is a DataError in every mode.
    ``Example.index`` is the 0-based position in ``pairs``, also after skipping.
    """
    if overlong not in OVERLONG_MODES:
        raise ValueError(
            f"unknown overlong mode {overlong!r}; valid modes: {', '.join(OVERLONG_MODES)}"
        )
    if max_src_len is not None and max_src_len < 2:
        raise ValueError(f"max_src_len must be >= 2 (one token + EOS), got {max_src_len}")
    if max_tgt_len is not None and max_tgt_len < 1:
        raise ValueError(f"max_tgt_len must be >= 1, got {max_tgt_len}")
    src_cap = None if max_src_len is None else max_src_len - 1  # tokens before EOS
    examples, n_overlong = [], 0
    for i, (src_text, tgt_text) in enumerate(pairs):
        src_tokens, tgt_tokens = src_tokenizer.tokenize(src_text), tgt_tokenizer.tokenize(tgt_text)
        # only the words a (truncated) source keeps can be copied
        oovs = source_oovs(src_tokens[:src_cap], src_vocab) if copy else []
        src = encode_extended(src_tokens, src_vocab, oovs)
        tgt = encode_extended(tgt_tokens, tgt_vocab, oovs)
        for side, ids in (("source", src), ("target", tgt)):
            if not ids:
                raise DataError(
                    f"example {i + 1} has an empty {side} after tokenization", path=source_name
                )
        too_long_src = src_cap is not None and len(src) > src_cap
        too_long_tgt = max_tgt_len is not None and len(tgt) > max_tgt_len
        if too_long_src or too_long_tgt:
            n_overlong += 1
            if overlong == "error":
                what = (
                    f"source has {len(src) + 1} ids (max_src_len={max_src_len})"
                    if too_long_src
                    else (f"target has {len(tgt)} tokens (max_tgt_len={max_tgt_len})")
                )
                raise DataError(f"example {i + 1} is too long: {what}", path=source_name)
            if overlong == "skip":
                continue
            src = src[:src_cap] if too_long_src else src
            tgt = tgt[:max_tgt_len] if too_long_tgt else tgt
        examples.append(Example(src=src + [EOS_ID], tgt=tgt, index=i))
    if n_overlong:
        verb = "truncated" if overlong == "truncate" else "skipped"
        warnings.warn(
            f"{source_name}: {verb} {n_overlong} of {len(pairs)} examples longer than "
            f"max_src_len={max_src_len} / max_tgt_len={max_tgt_len}",
            stacklevel=2,
        )
    if not examples and pairs:
        raise DataError("no examples left after skipping overlong ones", path=source_name)
    return examples


def collate(examples: Sequence[Example]) -> Batch:
    """Pad a list of examples into a :class:`Batch`, rows sorted longest target first, then longest
    source."""
    if not examples:
        raise ValueError("cannot collate an empty list of examples")
    rows = sorted(examples, key=lambda e: (len(e.tgt), len(e.src)), reverse=True)
    s_max = max(len(e.src) for e in rows)
    t_max = max(len(e.tgt) for e in rows) + 1
    src = [e.src + [PAD_ID] * (s_max - len(e.src)) for e in rows]
    tgt_in = [[BOS_ID] + e.tgt + [PAD_ID] * (t_max - 1 - len(e.tgt)) for e in rows]
    tgt_out = [e.tgt + [EOS_ID] + [PAD_ID] * (t_max - 1 - len(e.tgt)) for e in rows]
    return Batch(
        src=torch.tensor(src, dtype=torch.long),  # (B, S)
        src_lengths=torch.tensor([len(e.src) for e in rows], dtype=torch.long),  # (B,)
        tgt_in=torch.tensor(tgt_in, dtype=torch.long),  # (B, T)
        tgt_out=torch.tensor(tgt_out, dtype=torch.long),  # (B, T)
        indices=[e.index for e in rows],
        _num_target_tokens=sum(len(e.tgt) + 1 for e in rows),
    )


def _chunk(
    pool: list[Example], batch_size: int | None, max_tokens: int | None
) -> list[list[Example]]:
    """Consecutive groups of ``batch_size`` examples, or of at most ``max_tokens`` padded
    positions."""
    if batch_size is not None:
        return [pool[i : i + batch_size] for i in range(0, len(pool), batch_size)]
    groups, current, widest = [], [], 0
    for ex in pool:
        if current and (len(current) + 1) * max(widest, ex.cost) > max_tokens:
            groups.append(current)
            current, widest = [], 0
        current.append(ex)
        widest = max(widest, ex.cost)
    if current:
        groups.append(current)
    return groups


def _pools(
    examples: list[Example], batch_size: int | None, max_tokens: int | None
) -> list[list[Example]]:
    """Consecutive pools of about ``POOL_BATCHES`` batches' worth of examples."""
    if batch_size is not None:
        size = POOL_BATCHES * batch_size
        return [examples[i : i + size] for i in range(0, len(examples), size)]
    pools, current, tokens = [], [], 0
    for ex in examples:
        current.append(ex)
        tokens += ex.cost
        if tokens >= POOL_BATCHES * max_tokens:
            pools.append(current)
            current, tokens = [], 0
    if current:
        pools.append(current)
    return pools


def make_batches(
    examples: list[Example],
    batch_size: int | None = None,
    max_tokens: int | None = None,
    shuffle: bool = False,
    seed: int = 0,
    bucket: bool = True,
) -> list[Batch]:
    """Group examples into padded batches; every example lands in exactly one batch.

    Give exactly one of ``batch_size`` (sentences per batch) or ``max_tokens``
    (padded positions per batch: ``B * max(S, T)``; an example longer than
    ``max_tokens`` on its own gets a batch of one).

    ``bucket=True`` sorts by length inside pools of ~50 batches so padding is
    small. ``shuffle=True`` shuffles the examples before pooling and the
    batches afterwards, deterministically from ``seed`` (pass the epoch
    number for a new order each epoch). Without ``shuffle`` the result is
    deterministic; use each batch's ``indices`` to restore the input order.
    """
    if (batch_size is None) == (max_tokens is None):
        raise ValueError("give exactly one of batch_size or max_tokens")
    if batch_size is not None and batch_size < 1:
        raise ValueError(f"batch_size must be >= 1, got {batch_size}")
    if max_tokens is not None and max_tokens < 1:
        raise ValueError(f"max_tokens must be >= 1, got {max_tokens}")
    rng = random.Random(seed)
    order = list(examples)
    if shuffle:
        rng.shuffle(order)
    groups: list[list[Example]] = []
    for pool in _pools(order, batch_size, max_tokens) if bucket else [order]:
        if bucket:
            pool = sorted(pool, key=lambda e: (e.cost, len(e.src)))
        groups.extend(_chunk(pool, batch_size, max_tokens))
    if shuffle:
        rng.shuffle(groups)
    return [collate(g) for g in groups]
