"""The faithfulness subject of a seq2seq model (RNN encoder-decoder or Transformer): one input,
forced along the model's own greedy output, each decoding step a unit, the source tokens
("</s>" included) the positions.

* ``predict``: the source with the erased tokens removed (a source with none left is one padding
  token), the output teacher-forced, every step's distribution over the target vocabulary; all
  erasures in one batched forward pass;
* ``maps``: the attention the decoder pays while writing the output (a Transformer: the mean of
  its decoder layers' and heads' cross-attention) and, for a Transformer, attention rollout and
  flow through the encoder (:mod:`attnkit.explain.rollout`);
* ``gradients``: :func:`attnkit.explain.saliency.saliency_maps` on the same output;
* ``predict_with_attention`` (RNN decoders with attention): the decoder's attention module is
  replaced, for one call, by :class:`GivenAttention`, which returns the given weights at each
  step and makes the context of them as the module would (:meth:`Attention.context_from_weights`).
  A Transformer has no single attention to replace (every layer and head has its own), and a
  model without attention none at all: for both the permutation and adversarial tests do not
  apply.

Use the subjects inside :func:`plain` (eval mode, the reference backend: plain autograd).

Shapes: S source length, T output steps (units), V target vocabulary, N rows.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import torch
from torch import Tensor

from attnkit.accel.backend import resolve as resolve_backend
from attnkit.attention.base import Attention
from attnkit.data.copy_ids import output_ids
from attnkit.data.vocab import BOS_ID, EOS, EOS_ID, PAD_ID
from attnkit.errors import AttnkitError
from attnkit.evaluation.faithfulness import Subject
from attnkit.explain.saliency import saliency_maps


@contextlib.contextmanager
def plain(model) -> Iterator[None]:
    """The model in eval mode with the reference backend for the block, as it was after."""
    if getattr(model, "members", None) is not None:
        raise AttnkitError("faithfulness questions one model, not an ensemble")
    was_training, backend = model.training, model.backend
    model.eval()
    model.set_backend(resolve_backend("reference", next(model.parameters()).device))
    try:
        yield
    finally:
        model.set_backend(backend)
        model.train(was_training)


class GivenAttention(Attention):
    """Stands in for a decoder's attention module: returns ``weights`` (B, T, S) (step t of a
    step-by-step decoder at its t-th call, all T at once for one whole-target call), with the
    context the replaced module makes of them."""

    def __init__(self, inner: Attention, weights: Tensor):
        super().__init__()
        self.inner = inner
        self.weights = weights
        self.step = 0

    def project_keys(self, keys: Tensor):
        return self.inner.project_keys(keys)

    def forward(
        self,
        query: Tensor,
        keys: Tensor,
        projected=None,
        mask: Tensor | None = None,
        position: int = 0,
    ):
        if query.dim() == 2:  # one step
            w = self.weights[:, self.step]  # (B, S)
            self.step += 1
        else:
            w = self.weights[:, : query.size(1)]  # (B, T, S)
        return self.inner.context_from_weights(w, keys, projected), w


@contextlib.contextmanager
def given_attention(decoder, weights: Tensor) -> Iterator[None]:
    """For the block, ``decoder`` attends with ``weights`` (B, T, S) instead of computing them."""
    inner = decoder.attention
    decoder.attention = GivenAttention(inner, weights)
    try:
        yield
    finally:
        decoder.attention = inner


class Seq2SeqSubject(Subject):
    """One input of a :class:`attnkit.families.seq2seq.translator.Translator`, forced along its
    greedy output."""

    def __init__(self, translator, text: str):
        self.model = translator.model
        (example,), (tokens,) = translator.encode_sources([text], warn_unknown=False)
        (own,) = translator.translate([text], heads=False)
        finished = own.output_tokens[-1:] == [EOS]
        shown = own.output_tokens[:-1] if finished else own.output_tokens
        ids = output_ids(
            shown, tokens, translator.src_vocab, translator.tgt_vocab, translator.copies
        )
        decided = ids + [EOS_ID] if finished else ids  # an output cut off has no </s> step
        if not decided:
            raise AttnkitError(f"{text!r}: the model wrote nothing to question")
        self.text, self.output = text, own.output
        self.positions = tokens
        self.units = list(own.output_tokens)
        self.target_ids = ids
        device = translator.device
        self.src = torch.tensor([example.src], dtype=torch.long, device=device)  # (1, S)
        self.tgt_in = torch.tensor([[BOS_ID, *decided[:-1]]], dtype=torch.long, device=device)
        self.targets = torch.tensor(decided, dtype=torch.long)  # (T,)
        self.transformer = hasattr(self.model, "encoder_attention")
        self._maps: dict[str, Tensor] | None = None
        self._encoded = None  # (memory, decoder state) of the source, for predict_with_attention

    def _forward(self, src: Tensor, lengths: Tensor) -> tuple[Tensor, Tensor | None]:
        """src (N, S'), lengths (N,) -> logits (N, T, V) and the RNN's weights (N, T, S')."""
        return self.model(src, lengths, self.tgt_in.expand(src.size(0), -1))

    def predict(self, keep: Tensor) -> Tensor:
        n, s = keep.shape
        lengths = keep.sum(1).clamp_min(1)  # (N,)
        src = torch.full((n, int(lengths.max())), PAD_ID, dtype=torch.long)
        for row in range(n):
            kept = self.src[0, keep[row].to(self.src.device)].cpu()
            src[row, : len(kept)] = kept
        with torch.no_grad():
            logits, _ = self._forward(src.to(self.src.device), lengths.to(self.src.device))
        return logits.float().softmax(-1)  # (N, T, V)

    def maps(self) -> dict[str, Tensor]:
        if self._maps is None:
            self._maps = self._compute_maps()
        return self._maps

    def _compute_maps(self) -> dict[str, Tensor]:
        if not self.model.has_attention:
            return {}
        if self.transformer:
            from attnkit.explain.rollout import transformer_maps

            maps = transformer_maps(self.model, self.src, self.tgt_in, encoder=False)
            self.cross_by_layer = maps["cross_by_layer"]  # (Ld, T, S), for per-layer analyses
            self.encoder_attention = maps["encoder_attention"]  # (L, S, S)
            return {name: maps[name] for name in ("attention", "rollout", "flow")}
        with torch.no_grad():
            _, weights = self._forward(self.src, torch.tensor([self.src.size(1)]))
        return {"attention": weights[0].float().cpu()}  # (T, S)

    def attention(self) -> Tensor | None:
        if self.transformer or not self.model.has_attention:
            return None
        return self.maps()["attention"]

    def gradients(self, method: str, steps: int) -> Tensor:
        lengths = torch.tensor([self.src.size(1)], device=self.src.device)
        (m,) = saliency_maps(self.model, self.src, lengths, [self.target_ids], method, steps)
        return m[: len(self.units)]  # (T, S): no </s> row for an output cut off

    def predict_with_attention(self, weights: Tensor) -> Tensor:
        """The source is encoded once (the encoder does not read the attention); only the
        decoder runs for the N rows, so gradients reach the weights through it alone."""
        n = weights.size(0)
        if self._encoded is None:
            with torch.no_grad():
                lengths = torch.tensor([self.src.size(1)], device=self.src.device)
                self._encoded = self.model.encode(self.src, lengths)
        memory, state = self._encoded
        rows = torch.zeros(n, dtype=torch.long, device=self.src.device)
        with given_attention(self.model.decoder, weights.to(self.src.device)):
            memory = memory.index_select(rows)  # projected keys made by the replaced module
            logits, _ = self.model.decoder(
                self.tgt_in.expand(n, -1), state.index_select(rows), memory
            )
        return logits.float().softmax(-1)  # (N, T, V)


#: the most inputs one call questions
MAX_EXAMPLES = 5000


def split_or_texts(texts, split: str | None, count: int, read_split) -> list:
    """The inputs to question: ``texts``, or the first ``count`` items of ``split`` (test when
    neither is given) as ``read_split(split)`` lists them. AttnkitError for both, a bad count or
    no input."""
    if texts is not None and split is not None:
        raise AttnkitError("give inputs or --split, not both")
    if not 1 <= count <= MAX_EXAMPLES:
        raise AttnkitError(f"--count must be between 1 and {MAX_EXAMPLES}, got {count}")
    items = list(texts) if texts is not None else list(read_split(split or "test"))[:count]
    if not items:
        raise AttnkitError("faithfulness: no inputs")
    return items


def seq2seq_faithfulness(
    translator, texts, split, count, out, options, model: str = "", *, family: str, data_dir=None
) -> dict:
    """What ``attnkit faithfulness`` computes for a seq2seq checkpoint: the inputs (see
    :func:`split_or_texts`; a split read from ``data_dir`` or the data directory) questioned
    step by step, summed up, written to ``out`` (None: not written); ``model`` names the
    checkpoint in the outputs, ``family`` its family."""
    from attnkit.evaluation.faithfulness_report import evaluate_subjects
    from attnkit.evaluation.inputs import split_pairs

    def read_split(name):  # where this machine says, never the checkpoint's own paths
        return [s for s, _ in split_pairs(translator.config.data, name, data_dir)]

    sources = split_or_texts(texts, split, count, read_split)
    for i, text in enumerate(sources):
        if not isinstance(text, str) or not text.strip():
            raise AttnkitError(f"input {i + 1} is empty: nothing to question")
    meta = {
        "model": model,
        "family": family,
        "units": "decoding steps of the model's own output; positions: source tokens",
        "inputs": f"{split or 'test'} split, first {len(sources)}" if texts is None else "typed",
    }
    with plain(translator.model):
        subjects = (Seq2SeqSubject(translator, text) for text in sources)
        return evaluate_subjects(subjects, options, out, meta)
