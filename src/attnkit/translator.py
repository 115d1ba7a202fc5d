"""A trained seq2seq model with its vocabularies and tokenizers: load, save, translate.

``Translator.translate(texts)`` goes from raw text to output text AND the
attention matrix of every output, so every command that shows attention
(translate, evaluate, plot, demo, report) shares this one path.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch
from tqdm import tqdm

from attnkit.accel.backend import resolve as resolve_backend
from attnkit.checkpoint.seq2seq import Seq2SeqBundle, TextSides, load_seq2seq
from attnkit.data.batching import Example, collate
from attnkit.data.copy_ids import decode_extended, encode_extended, output_ids, source_oovs
from attnkit.data.text_input import as_utf8, unknown_words
from attnkit.data.tokenizers import Tokenizer
from attnkit.data.vocab import EOS, EOS_ID, Vocab, target_prefix_ids
from attnkit.decoding import forced_decode, max_output_length
from attnkit.decoding.search import SearchOptions, search
from attnkit.device import resolve_device
from attnkit.errors import AttnkitError, CheckpointError, InputError
from attnkit.experiment import ExperimentConfig
from attnkit.models.architectures import MODEL_CLASSES
from attnkit.viz.inline import ShowsRecord
from attnkit.viz.records import AttentionRecord

#: an input longer than (data.max_src_len) x this many characters is cut to that length before it
#: is tokenized (a 1 GB line costs no tokenizing time); no real token is this long
CHARS_PER_TOKEN = 100


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


@dataclass
class Prepared:
    """Inputs checked and tokenized once (:meth:`Translator.prepare`), ready to decode: the
    texts, an example per non-blank one (``index``: its position in ``texts``), and the source
    tokens each encodes by position ("</s>" included; blank inputs have none)."""

    texts: list[str]
    examples: list[Example]
    tokens: dict[int, list[str]]

    def __len__(self) -> int:
        return len(self.texts)

    def __add__(self, other: Prepared) -> Prepared:
        """Both, one after the other (the server decodes several requests as one batch)."""
        shift = len(self.texts)
        moved = [Example(e.src, e.tgt, e.index + shift) for e in other.examples]
        tokens = {**self.tokens, **{i + shift: t for i, t in other.tokens.items()}}
        return Prepared(self.texts + other.texts, self.examples + moved, tokens)


class Translator:
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

    # ---- checkpoint directory (attnkit.checkpoint.seq2seq) -----------------
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
        if not isinstance(self.model, MODEL_CLASSES):
            raise AttnkitError(
                "an ensemble has no checkpoint of its own: its members' directories are its "
                "checkpoint"
            )
        return self.bundle.save(directory, trainer_state, trainer_tensors)

    @classmethod
    def load(cls, directory: str | Path, device: str | torch.device = "auto") -> Translator:
        device = device if isinstance(device, torch.device) else resolve_device(device)
        bundle = load_seq2seq(directory, device)
        model = bundle.model
        model.set_backend(
            resolve_backend(bundle.config.decode.backend, device, next(model.parameters()).dtype)
        )
        return cls.from_bundle(bundle, device)

    @classmethod
    def load_ensemble(
        cls, directories: Sequence[str | Path], device: str | torch.device = "auto"
    ) -> Translator:
        """Checkpoints that decode as one model (:class:`attnkit.decoding.ensemble.Ensemble`).

        They must share the task, the vocabularies and the tokenizers (their sizes and attention may
        differ); the first one's data and decode settings apply. One directory loads a one-member
        ensemble, which decodes exactly as the model alone.
        """
        from attnkit.decoding.ensemble import Ensemble

        if not directories:
            raise AttnkitError("an ensemble needs at least one checkpoint directory")
        device = device if isinstance(device, torch.device) else resolve_device(device)
        first, *rest = [cls.load(d, device) for d in directories]
        for directory, other in zip(directories[1:], rest):
            for what, mine, theirs in (
                ("task", first.config.data.task, other.config.data.task),
                ("source vocabulary", first.src_vocab.itos, other.src_vocab.itos),
                ("target vocabulary", first.tgt_vocab.itos, other.tgt_vocab.itos),
                (
                    "source tokenizer",
                    _identity(first.src_tokenizer),
                    _identity(other.src_tokenizer),
                ),
                (
                    "target tokenizer",
                    _identity(first.tgt_tokenizer),
                    _identity(other.tgt_tokenizer),
                ),
            ):
                if mine != theirs:
                    raise CheckpointError(
                        f"{directory}: its {what} differs from that of {directories[0]}, "
                        "so the two cannot decode as an ensemble"
                    )
        model = Ensemble([first.model] + [t.model for t in rest]).eval()
        return cls(
            model,
            first.config,
            first.src_tokenizer,
            first.tgt_tokenizer,
            first.src_vocab,
            first.tgt_vocab,
            device,
        )

    # ---- text -> text + attention -------------------------------------------
    def encode_sources(
        self,
        texts: Sequence[str],
        warn_unknown: bool = True,
        names: Sequence[str] | None = None,
        warn: bool = True,
    ) -> tuple[list[Example], list[list[str]]]:
        """Raw source texts -> examples and the tokens each encodes ("</s>" included).

        Empty inputs are errors (:meth:`prepare` passes blank lines through before this);
        over-long ones are truncated with a warning, or refused when data.overlong is "error";
        tokens never seen in training become ``<unk>``, with one warning per input naming them
        (unless ``warn_unknown`` is False: scoring a split says nothing per line; ``warn`` False:
        no warning at all). Messages call input i ``names[i]`` (default ``input i+1``); examples
        are indexed by position in ``texts``. Errors are :class:`InputError` naming the input.
        """
        cap = self.config.data.max_src_len - 1
        chars = (cap + 1) * CHARS_PER_TOKEN  # more can only be cut: not tokenized at all
        examples, token_lists, n_long = [], [], 0
        for i, text in enumerate(texts):
            name = names[i] if names is not None else f"input {i + 1}"
            if len(text) > chars:
                if self.config.data.overlong == "error":
                    raise InputError(
                        f"{name} has {len(text):,} characters, more than data.max_src_len - 1 = "
                        f"{cap} tokens can hold",
                        name,
                    )
                text = text[:chars]
            tokens = self.src_tokenizer.tokenize(text)
            if not text.strip() or not tokens:
                raise InputError(f"{name} is empty: nothing to translate", name)
            if len(tokens) > cap:
                if self.config.data.overlong == "error":
                    raise InputError(
                        f"{name} has {len(tokens)} tokens, more than data.max_src_len - 1 = {cap}",
                        name,
                    )
                n_long += 1
                tokens = tokens[:cap]
            if warn_unknown and warn:
                unknown_words(name, tokens, self.src_vocab, self.copies)
            oovs = source_oovs(tokens, self.src_vocab) if self.copies else []  # copied by id
            examples.append(
                Example(encode_extended(tokens, self.src_vocab, oovs) + [EOS_ID], [], i)
            )
            token_lists.append(list(tokens) + [EOS])
        if n_long and warn:
            warnings.warn(
                f"{n_long} input(s) longer than {cap} tokens were truncated (data.max_src_len)",
                stacklevel=2,
            )
        return examples, token_lists

    def prepare(
        self,
        texts: Sequence[str | bytes],
        warn_unknown: bool = True,
        names: Sequence[str] | None = None,
        allow_blank: bool = True,
        warn: bool = True,
    ) -> Prepared:
        """``texts`` checked and tokenized, ready for :meth:`translate` (which calls this for
        raw texts; the server calls it once per request, as the request is checked, and decodes
        the result). Text that is not UTF-8 becomes U+FFFD. A blank input gives a blank output,
        with a warning, or with ``allow_blank`` False an :class:`InputError`; ``names`` and
        ``warn`` as :meth:`encode_sources` takes them."""
        texts = as_utf8(texts, "input")
        if not texts:
            raise AttnkitError("no input to translate")
        names = list(names) if names is not None else [f"input {i + 1}" for i in range(len(texts))]
        blank = [i for i, text in enumerate(texts) if not text.strip()]
        if blank and not allow_blank:
            raise InputError(f"{names[blank[0]]}: blank: nothing to translate", names[blank[0]])
        if blank and warn:  # a blank line gives a blank line: files stay line-aligned
            shown = ", ".join(str(i + 1) for i in blank[:10]) + (", ..." if len(blank) > 10 else "")
            warnings.warn(
                f"{len(blank)} blank input(s) (line {shown}) give blank outputs", stacklevel=3
            )
        filled = [i for i, text in enumerate(texts) if text.strip()]
        examples, token_lists = self.encode_sources(
            [texts[i] for i in filled], warn_unknown, [names[i] for i in filled], warn
        )
        for example in examples:  # back to the caller's positions
            example.index = filled[example.index]
        return Prepared(texts, examples, dict(zip(filled, token_lists)))

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
        """Translate ``texts`` (raw, or :meth:`prepare`'s result); beam_size 1 is greedy. Returns
        one Translation per input, in order; a blank input gives a blank output (with a
        warning). ``heads``: keep every layer's and head's attention where the model has them
        (a Transformer).

        ``prefix``: target tokens every output begins with (decoding is forced through them,
        then searches on; their attention rows and log-probability are part of each output).
        ``top_k``: decoding without a prefix (greedy or beam search) keeps the k most likely
        tokens of every step of every output (``Translation.top``); :func:`top_k_steps` finds
        them by another pass where a prefix was forced."""
        if beam_size < 1 or not 1 <= n_best <= beam_size:
            raise AttnkitError(
                f"need beam size >= 1 and 1 <= n-best <= beam size, got beam {beam_size}, n-best "
                f"{n_best}"
            )
        dec = self.config.decode
        alpha = dec.alpha if alpha is None else alpha
        if not (math.isfinite(alpha) and alpha >= 0):
            raise AttnkitError(f"length penalty alpha: must be a finite number >= 0, got {alpha}")
        batch_size = batch_size or dec.batch_size
        prefix_ids = target_prefix_ids(self.tgt_vocab, prefix) if prefix else None
        how = SearchOptions(beam_size, alpha, n_best, prefix_ids, heads, top_k)
        prepared = texts if isinstance(texts, Prepared) else self.prepare(texts, warn_unknown)
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

    @property
    def copies(self) -> bool:
        """Whether the model copies source words (``model.copy``: extended ids in and out)."""
        return bool(getattr(self.config.model, "copy", False))


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


def load_translator(
    directories: Sequence[str | Path], device: str | torch.device = "auto"
) -> Translator:
    """One checkpoint directory (the model itself), or several that decode as an ensemble."""
    if len(directories) == 1:
        return Translator.load(directories[0], device)
    return Translator.load_ensemble(directories, device)


def _unpack(sides: TextSides) -> tuple[Tokenizer, Tokenizer, Vocab, Vocab]:
    return sides.src_tokenizer, sides.tgt_tokenizer, sides.src_vocab, sides.tgt_vocab


def _identity(tokenizer: Tokenizer) -> tuple:
    """What decides how a tokenizer splits text: its settings and any model file's bytes."""
    return tokenizer.to_json(), getattr(tokenizer, "model_proto", None)
