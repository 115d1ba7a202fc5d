"""What a seq2seq run starts from: tokenizers, vocabularies and a seeded model, or those of the
checkpoint it resumes; and its training examples, encoded."""

from __future__ import annotations

import copy
import dataclasses
import random
import shutil
import tempfile
from contextlib import ExitStack
from pathlib import Path

import numpy as np
import torch

from attnkit.data.batching import encode_pairs
from attnkit.data.tasks.base import Splits
from attnkit.data.tasks.paths import resolve_data_paths
from attnkit.data.tokenizers import CharTokenizer, Tokenizer, WordTokenizer
from attnkit.data.vocab import Vocab
from attnkit.errors import CheckpointError
from attnkit.experiment import ExperimentConfig
from attnkit.models.architectures import build_model
from attnkit.translator import Translator


def make_tokenizer(
    level: str, lowercase: bool, texts: list[str], directory: Path, name: str, vocab_size: int
) -> Tokenizer:
    """A char or word tokenizer, or a sentencepiece model trained on ``texts`` in ``directory``."""
    if level == "char":
        return CharTokenizer(lowercase)
    if level == "word":
        return WordTokenizer(lowercase)
    from attnkit.data.subword import SentencePieceTokenizer

    directory.mkdir(parents=True, exist_ok=True)
    return SentencePieceTokenizer.train(
        (t.lower() if lowercase else t for t in texts), directory, name, vocab_size
    )


def seed_everything(seed: int) -> None:
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)


def new_translator(
    cfg: ExperimentConfig, splits: Splits, device: torch.device, is_main: bool
) -> Translator:
    """Tokenizers and vocabularies of the training split and a model seeded with ``train.seed``.

    The main process (rank 0 under DDP) writes sentencepiece models into the run directory and
    clears the checkpoints a previous run left for averaging; the others work in a scratch one.
    """
    d = cfg.data
    seed_everything(cfg.train.seed)
    if is_main:
        for stale in ("top", "averaged"):  # a fresh run must not average old weights
            shutil.rmtree(cfg.run_dir / stale, ignore_errors=True)
    with ExitStack() as scratch:
        tok_dir = cfg.run_dir / "tokenizers"
        if not is_main:  # only rank 0 writes into the run directory
            tok_dir = Path(scratch.enter_context(tempfile.TemporaryDirectory()))
        sources, targets = zip(*splits.train)
        src_tok = make_tokenizer(
            d.src_level, d.lowercase, list(sources), tok_dir, "source", d.vocab_size
        )
        tgt_tok = make_tokenizer(
            d.tgt_level, d.lowercase, list(targets), tok_dir, "target", d.vocab_size
        )
    src_vocab = Vocab.build(src_tok.tokenize(s) for s, _ in splits.train)
    tgt_vocab = Vocab.build(tgt_tok.tokenize(t) for _, t in splits.train)
    model = build_model(cfg.model, len(src_vocab), len(tgt_vocab)).to(device)
    return Translator(model, cfg, src_tok, tgt_tok, src_vocab, tgt_vocab, device)


def resumed_translator(cfg: ExperimentConfig, device: torch.device) -> Translator:
    """The model, tokenizers and vocabularies of ``run_dir/last``, once its experiment is this."""
    last = cfg.run_dir / "last"
    if not last.exists():
        raise CheckpointError(f"{last}: nothing to resume from (train once without --resume)")
    translator = Translator.load(last, device)
    saved = translator.config
    # paths saved relative (before they were stored absolute) were read from the current directory
    saved_data = copy.deepcopy(saved.data)
    resolve_data_paths(saved_data, None, (), "data")
    for section, mine, theirs in (
        ("model", saved.model, cfg.model),
        ("data", saved_data, cfg.data),
    ):
        key = _first_difference(mine, theirs)
        if key is not None:
            raise CheckpointError(
                f"{last}: {section}.{key} differs: {_value(mine, key)} there, "
                f"{_value(theirs, key)} in this config; resume needs the same experiment (set it "
                "back, or train afresh with --overwrite)"
            )
    return translator


def _first_difference(saved, given) -> str | None:
    """The first key whose value differs between two config sections (``task`` for two tasks)."""
    if type(saved) is not type(given):
        return "task"
    for f in dataclasses.fields(saved):
        if getattr(saved, f.name) != getattr(given, f.name):
            return f.name
    return None


def _value(section, key: str) -> str:
    return repr(getattr(section, key, None))


def training_examples(translator: Translator, splits: Splits, cfg: ExperimentConfig) -> list:
    """The training pairs as token ids, cut or skipped as ``data.overlong`` says."""
    d = cfg.data
    return encode_pairs(
        splits.train,
        translator.src_tokenizer,
        translator.tgt_tokenizer,
        translator.src_vocab,
        translator.tgt_vocab,
        d.max_src_len,
        d.max_tgt_len,
        d.overlong,
        source_name=f"{d.task} train",
    )


def checkpoint_bytes(model: torch.nn.Module) -> int:
    """About the size of one checkpoint: the weights and Adam's two moments."""
    return 3 * sum(t.numel() * t.element_size() for t in model.state_dict().values())
