"""The seq2seq decoding service: a trained model with its vocabularies and tokenizers, from
raw text to output text AND the attention matrix of every output (:class:`Translation`).

Every command and report that shows a seq2seq model's attention (translate, evaluate, plot,
explain, faithfulness, the demo, the server) and the trainer's dev scores decode through
:class:`Translator`. A user meets it under the family's API object (``attnkit.load``:
:class:`attnkit.api.Seq2SeqModel`, whose ``translator`` it is), which loads one checkpoint or an
ensemble and checks a user's arguments, once (:meth:`attnkit.api.Seq2SeqModel.search_options`);
the service decodes what it is given and checks none of them again. Reading the inputs (checked,
tokenized and encoded once) is :class:`attnkit.data.text_input.SourceReader`'s affair.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch
from tqdm import tqdm

from attnkit.accel.backend import resolve as resolve_backend
from attnkit.data.batching import Example, collate
from attnkit.data.copy_ids import decode_extended, output_ids, source_oovs
from attnkit.data.text_input import Prepared, SourceReader, as_utf8
from attnkit.data.tokenizers import Tokenizer
from attnkit.data.vocab import EOS, Vocab, target_prefix_ids
from attnkit.decoding import forced_decode, max_output_length
from attnkit.decoding.search import SearchOptions, search
from attnkit.device import resolve_device
from attnkit.errors import AttnkitError
from attnkit.families.seq2seq.bundle import Seq2SeqBundle, TextSides, load_seq2seq
from attnkit.families.seq2seq.config import ExperimentConfig
from attnkit.models.architectures import MODEL_CLASSES
from attnkit.viz.inline import ShowsRecord
from attnkit.viz.records import AttentionRecord


@dataclass
class Translation(ShowsRecord):
    """One output for one input; ``weights`` is (len(output_tokens), len(source_tokens)): the
    attention, all zeros for a model without it (``model.has_attention`` False; pictures take
    its saliency instead, :mod:`attnkit.explain.no_attention`).

    ``to_dict()``, ``plot(path_or_ax)`` and ``show()`` (inline in a notebook) draw its map."""

    source: str
    source_tokens: list[str]  # what the encoder read, "</s>" included
    output: str
    output_tokens: list[str]  # what the decoder emitted, "</s>" included when it ended
    weights: np.ndarray
    score: float
    nbest: list[Translation] = field(default_factory=list)  # all n-best, this one first
    #: (len(output_tokens), L, H, len(source_tokens)): every layer's and head's attention, for a
    #: Transformer translated with ``heads=True`` (``weights`` is their mean); else None
    heads: np.ndarray | None = None
    #: decoding with ``top_k``: (probabilities, token ids), each (len(output_tokens), k),
    #: the k most likely tokens of every step, best first; else None
    top: tuple[np.ndarray, np.ndarray] | None = None
    #: the task's gold alignment links of source and output, (output row, source column) pairs,
    #: where the Python API found them (numbers, dates); pictures outline those cells
    gold: list[tuple[int, int]] | None = None
    #: (len(output_tokens),) a copying model's p_gen at every step (1: written, 0: copied)
    p_gen: np.ndarray | None = None

    def record(self, reference: str | None = None) -> AttentionRecord:
        """The map as an :class:`~attnkit.viz.records.AttentionRecord`, what pictures, reports
        and the JSON/NPZ files take; ``reference``: the right output, where it is known."""
        return AttentionRecord(
            source=self.source,
            source_tokens=self.source_tokens,
            output=self.output,
            output_tokens=self.output_tokens,
            weights=self.weights,
            reference=reference,
            score=self.score,
            heads=self.heads,
            gold=self.gold,
            p_gen=self.p_gen,
        )

    def to_dict(self) -> dict:
        """Plain JSON types: the record (tokens, weights, heads) and the n-best outputs."""
        return {
            **self.record().to_json(),
            "nbest": [{"output": o.output, "score": o.score} for o in self.nbest or [self]],
        }


class Translator:
    """A seq2seq model with its config, tokenizers and vocabularies, decoding text: the service
    under the API object (``attnkit.load(path).translator``).

    ``model``: the torch module (an RNN encoder-decoder, a Transformer, or an
    :class:`~attnkit.decoding.ensemble.Ensemble` of them); ``config``: the run's resolved
    experiment config, whose ``data`` says how inputs are read and ``decode`` the default
    settings (batch size, length penalty, output length, backend); ``device``: where batches go
    (default: the model's).

    Built from a checkpoint directory (:meth:`load`) or from a bundle whose model it shares
    (:meth:`from_bundle`: the trainer scores dev with it). Inputs go through :meth:`prepare`,
    then :meth:`decode` (greedy or beam search, :class:`~attnkit.decoding.search.SearchOptions`)
    or :meth:`teacher_forced`; :meth:`translate` does both for settings already checked.
    """

    def __init__(
        self,
        model: torch.nn.Module,
        config: ExperimentConfig,
        src_tokenizer: Tokenizer,
        tgt_tokenizer: Tokenizer,
        src_vocab: Vocab,
        tgt_vocab: Vocab,
        device: torch.device | None = None,
    ):
        self.model = model
        self.config = config
        self.src_tokenizer, self.tgt_tokenizer = src_tokenizer, tgt_tokenizer
        self.src_vocab, self.tgt_vocab = src_vocab, tgt_vocab
        self.device = device or next(model.parameters()).device

    @property
    def sides(self) -> TextSides:
        """The tokenizers and vocabularies: how the model reads and writes text."""
        return TextSides(self.src_tokenizer, self.tgt_tokenizer, self.src_vocab, self.tgt_vocab)

    @property
    def copies(self) -> bool:
        """Whether the model copies source words (``model.copy``: extended ids in and out)."""
        return bool(getattr(self.config.model, "copy", False))

    # ---- checkpoint directory (attnkit.families.seq2seq.bundle) -----------------
    @property
    def bundle(self) -> Seq2SeqBundle:
        """The model, config and text sides this translator decodes with (shared, not copied)."""
        return Seq2SeqBundle(self.model, self.config, self.sides)

    @classmethod
    def from_bundle(cls, bundle: Seq2SeqBundle, device: torch.device | None = None) -> Translator:
        """A translator that decodes with ``bundle``'s model as it is (its weights are shared:
        what the bundle's model learns, this translator decodes)."""
        return cls(bundle.model, bundle.config, *_unpack(bundle.sides), device)

    def save(
        self,
        directory: str | Path,
        trainer_state: dict | None = None,
        trainer_tensors: dict[str, torch.Tensor] | None = None,
    ) -> Path:
        """The bundle written to ``directory`` as a checkpoint (atomically); an ensemble has no
        checkpoint of its own (its members' directories are)."""
        if not isinstance(self.model, MODEL_CLASSES):
            raise AttnkitError(
                "an ensemble has no checkpoint of its own: its members' directories are its "
                "checkpoint"
            )
        return self.bundle.save(directory, trainer_state, trainer_tensors)

    @classmethod
    def load(cls, directory: str | Path, device: str | torch.device = "auto") -> Translator:
        """The checkpoint in ``directory`` (validated before anything is allocated), on
        ``device``, computing with the backend its ``decode.backend`` names. Several that decode
        as one ensemble: ``attnkit.load([dir1, dir2])``."""
        device = device if isinstance(device, torch.device) else resolve_device(device)
        bundle = load_seq2seq(directory, device)
        model = bundle.model
        model.set_backend(
            resolve_backend(bundle.config.decode.backend, device, next(model.parameters()).dtype)
        )
        return cls.from_bundle(bundle, device)

    # ---- text in --------------------------------------------------------------
    @property
    def source(self) -> SourceReader:
        """How the model reads its inputs: the source tokenizer and vocabulary, ``data``'s
        length limit and what an input above it gets, and whether source words are copied."""
        data = self.config.data
        return SourceReader(
            self.src_tokenizer, self.src_vocab, data.max_src_len, data.overlong, self.copies
        )

    def encode_sources(
        self,
        texts: Sequence[str],
        warn_unknown: bool = True,
        names: Sequence[str] | None = None,
        warn: bool = True,
    ) -> tuple[list[Example], list[list[str]]]:
        """Raw source texts -> examples and the tokens each encodes ("</s>" included); errors
        are :class:`~attnkit.errors.InputError` naming the input
        (:meth:`attnkit.data.text_input.SourceReader.encode`)."""
        return self.source.encode(texts, warn_unknown, names, warn)

    def prepare(
        self,
        texts: Sequence[str | bytes],
        warn_unknown: bool = True,
        names: Sequence[str] | None = None,
        allow_blank: bool = True,
        warn: bool = True,
    ) -> Prepared:
        """``texts`` checked and tokenized once, ready for :meth:`decode` (a blank input gives a
        blank output, with a warning, or with ``allow_blank`` False an InputError;
        :meth:`attnkit.data.text_input.SourceReader.prepare`)."""
        return self.source.prepare(texts, warn_unknown, names, allow_blank, warn)

    # ---- text -> text + attention -------------------------------------------
    def translate(
        self,
        texts: Sequence[str] | Prepared,
        beam_size: int = 1,
        alpha: float | None = None,
        n_best: int = 1,
        batch_size: int | None = None,
        progress: bool = False,
        warn_unknown: bool = True,
        heads: bool = False,
        prefix: Sequence[str] | None = None,
        top_k: int = 0,
    ) -> list[Translation]:
        """Translate ``texts`` (raw, or :meth:`prepare`'s result): :meth:`decode` with these
        settings, taken as given (evaluation, training's dev scores and scripts pass settings
        already checked; a user's are checked by the API object). beam_size 1 is greedy;
        ``alpha`` None: the checkpoint's length penalty; ``heads``: keep every layer's and
        head's attention where the model has them (a Transformer); ``prefix``: target tokens
        every output begins with; ``top_k``: keep the k most likely tokens of every step."""
        alpha = self.config.decode.alpha if alpha is None else alpha
        prefix_ids = tuple(target_prefix_ids(self.tgt_vocab, prefix)) if prefix else None
        how = SearchOptions(beam_size, alpha, n_best, prefix_ids, heads, top_k)
        prepared = texts if isinstance(texts, Prepared) else self.prepare(texts, warn_unknown)
        return self.decode(prepared, how, batch_size, progress)

    def decode(
        self,
        prepared: Prepared,
        how: SearchOptions,
        batch_size: int | None = None,
        progress: bool = False,
    ) -> list[Translation]:
        """Decode :meth:`prepare`'s inputs as ``how`` says (greedy or beam search, from a forced
        prefix when it holds one): one Translation per input, in order, its n-best outputs in
        ``nbest``; a blank input gives a blank output. Inputs of similar length are batched
        together, ``batch_size`` (default ``decode.batch_size``) at a time; ``progress``: a bar
        on a terminal.

        ``how.prefix_ids``: every output is forced through them, then searched on; their
        attention rows and log-probability are part of each output. ``how.top_k``: decoding
        without a prefix keeps the k most likely tokens of every step of every output
        (``Translation.top``); :func:`~attnkit.decoding.topk.top_k_steps` finds them by another
        pass where a prefix was forced."""
        dec = self.config.decode
        batch_size = batch_size or dec.batch_size
        texts, examples, token_lists = prepared.texts, prepared.examples, prepared.tokens
        results: list[Translation | None] = [None] * len(texts)
        for i, text in enumerate(texts):
            if i not in token_lists:  # blank
                results[i] = Translation(text, [], "", [], np.zeros((0, 0)), 0.0)
                results[i].nbest = [results[i]]
        order = sorted(
            range(len(examples)), key=lambda i: len(examples[i].src)
        )  # similar lengths together
        self.model.eval()
        chunks = [order[i : i + batch_size] for i in range(0, len(order), batch_size)]
        # a bar only on a terminal (disable=None asks the stream): logs and pipes get none
        bar = {"desc": "decoding", "unit": "batch", "leave": False}
        for chunk in tqdm(chunks, disable=None if progress else True, **bar):
            batch = collate([examples[i] for i in chunk]).to(self.device)  # indices: input lines
            max_len = max_output_length(
                batch.src_lengths, dec.max_len_ratio, dec.max_len_extra, dec.max_len_cap
            )
            hyps = search(self.model, batch, max_len, how)
            for row, index in enumerate(batch.indices):
                options = [
                    _translation(self.sides, self.copies, texts[index], token_lists[index], h)
                    for h in hyps[row]
                ]
                options[0].nbest = options
                results[index] = options[0]
        return results  # type: ignore[return-value]

    def teacher_forced(
        self,
        texts: Sequence[str],
        references: Sequence[str],
        batch_size: int | None = None,
        heads: bool = False,
    ) -> list[Translation]:
        """Make the model write each reference (forced decoding): one Translation per input, in
        order, whose output is the reference, with the attention paid while writing it and its
        log-probability as the score. Reference tokens unknown to the model become ``<unk>``.
        ``heads``: keep every layer's and head's attention where the model has them."""
        if len(texts) != len(references):
            raise AttnkitError(f"{len(texts)} inputs but {len(references)} references")
        examples, token_lists = self.encode_sources(as_utf8(texts, "input"), warn_unknown=False)
        sides = (self.src_vocab, self.tgt_vocab, self.copies)
        targets = [
            output_ids(self.tgt_tokenizer.tokenize(r), tokens, *sides)
            for r, tokens in zip(as_utf8(references, "reference"), token_lists)
        ]
        batch_size = batch_size or self.config.decode.batch_size
        results: list[Translation | None] = [None] * len(texts)
        self.model.eval()
        for start in range(0, len(examples), batch_size):
            batch = collate(examples[start : start + batch_size]).to(self.device)
            hyps = forced_decode(
                self.model,
                batch.src,
                batch.src_lengths,
                [targets[i] for i in batch.indices],
                keep_heads=heads,
            )
            for index, hyp in zip(batch.indices, hyps):
                results[index] = _translation(
                    self.sides, self.copies, texts[index], token_lists[index], hyp
                )
        return results  # type: ignore[return-value]


def _translation(
    sides: TextSides, copies: bool, text: str, source_tokens: list[str], hyp
) -> Translation:
    """A hypothesis as text (a copying model's extended ids: the source words they stand for)."""
    oovs = source_oovs(source_tokens, sides.src_vocab) if copies else []
    output_tokens = decode_extended(hyp.tokens, sides.tgt_vocab, oovs)
    output = sides.tgt_tokenizer.detokenize(output_tokens)
    shown = output_tokens + ([EOS] if hyp.finished else [])
    heads = None if hyp.heads is None else hyp.heads.numpy()
    top = None if hyp.top is None else (hyp.top[0].numpy(), hyp.top[1].numpy())
    p_gen = None if hyp.p_gen is None else hyp.p_gen.numpy()
    found = Translation(text, source_tokens, output, shown, hyp.weights.numpy(), hyp.score)
    found.heads, found.top, found.p_gen = heads, top, p_gen
    return found


def as_translator(model: Translator | Seq2SeqBundle) -> Translator:
    """``model`` itself, or a translator that decodes with a bundle's model (the trainer holds a
    bundle and scores dev with it)."""
    return model if isinstance(model, Translator) else Translator.from_bundle(model)


def _unpack(sides: TextSides) -> tuple[Tokenizer, Tokenizer, Vocab, Vocab]:
    return sides.src_tokenizer, sides.tgt_tokenizer, sides.src_vocab, sides.tgt_vocab
