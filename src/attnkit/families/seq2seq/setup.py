"""What a seq2seq run starts from: its bundle
(:class:`~attnkit.families.seq2seq.bundle.Seq2SeqBundle`: tokenizers, vocabularies and a seeded
model, or those of the checkpoint it resumes), with the optimizer, schedule and counters
(:func:`starting_point`); and its training examples, encoded."""

from __future__ import annotations

import copy
import random
import shutil
import tempfile
from collections.abc import Callable
from contextlib import ExitStack
from pathlib import Path

import numpy as np
import torch

from attnkit import checkpoint as ckpt
from attnkit.data.batching import encode_pairs
from attnkit.data.copy_ids import joint_vocab
from attnkit.data.tasks.base import Splits
from attnkit.data.tasks.paths import resolve_data_paths
from attnkit.data.tasks.registry import task_metric
from attnkit.data.tokenizers import CharTokenizer, MosesTokenizer, Tokenizer, WhitespaceTokenizer
from attnkit.data.vocab import Vocab
from attnkit.errors import AttnkitError, CheckpointError
from attnkit.families.seq2seq.bundle import Seq2SeqBundle, TextSides, load_seq2seq
from attnkit.families.seq2seq.checkpoints import restore_seq2seq
from attnkit.families.seq2seq.config import (
    ExperimentConfig,
    experiment_from_dict,
    experiment_to_dict,
)
from attnkit.models.architectures import build_model
from attnkit.training import resume_config, schedules
from attnkit.training.optim import adam
from attnkit.training.rundir import recover_before_resume
from attnkit.training.state import TrainerState

#: the levels whose tokenizer learns nothing from the data
SIMPLE_LEVELS = {"char": CharTokenizer, "word": MosesTokenizer, "whitespace": WhitespaceTokenizer}


def make_tokenizer(
    level: str,
    lowercase: bool,
    texts: list[str],
    directory: Path,
    name: str,
    vocab_size: int,
    normalize: str | None = None,
) -> Tokenizer:
    """The tokenizer of ``level`` (:data:`attnkit.data.tokenizers` explains each) that brings
    text to the Unicode form ``normalize`` first; a sentencepiece model is trained on ``texts``
    in ``directory``."""
    if level in SIMPLE_LEVELS:
        return SIMPLE_LEVELS[level](lowercase, normalize)
    from attnkit.data.subword import SentencePieceTokenizer

    directory.mkdir(parents=True, exist_ok=True)
    return SentencePieceTokenizer.train(
        (t.lower() if lowercase else t for t in texts),
        directory,
        name,
        vocab_size,
        normalize=normalize,
    )


def seed_everything(seed: int) -> None:
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)


def new_bundle(
    cfg: ExperimentConfig, splits: Splits, device: torch.device, is_main: bool
) -> Seq2SeqBundle:
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
        form = None if d.normalize == "none" else d.normalize
        src_tok = make_tokenizer(
            d.src_level, d.lowercase, list(sources), tok_dir, "source", d.vocab_size, form
        )
        tgt_tok = make_tokenizer(
            d.tgt_level, d.lowercase, list(targets), tok_dir, "target", d.vocab_size, form
        )
    src_vocab = Vocab.build(src_tok.tokenize(s) for s, _ in splits.train)
    tgt_vocab = Vocab.build(tgt_tok.tokenize(t) for _, t in splits.train)
    if copies(cfg):  # one vocabulary, so that a source id is the target id of the same word
        src_vocab = tgt_vocab = joint_vocab(
            (src_tok.tokenize(s) for s, _ in splits.train),
            (tgt_tok.tokenize(t) for _, t in splits.train),
        )
    model = build_model(cfg.model, len(src_vocab), len(tgt_vocab)).to(device)
    return Seq2SeqBundle(model, cfg, TextSides(src_tok, tgt_tok, src_vocab, tgt_vocab))


def resumed_bundle(
    cfg: ExperimentConfig, device: torch.device, log: Callable[[str], None] = print
) -> Seq2SeqBundle:
    """The model, tokenizers and vocabularies of ``run_dir/last``, once ``cfg`` changes nothing
    of its experiment that a resumed run cannot honour; logs each change it makes
    (:func:`attnkit.training.resume_config.changes`)."""
    last = _last(cfg)
    bundle = load_seq2seq(last, device)
    lines = resume_config.changes(
        _comparable(bundle.config), experiment_to_dict(cfg), resume_config.SEQ2SEQ, last
    )
    for line in lines:
        log(line)
    return bundle


def starting_point(
    cfg: ExperimentConfig,
    splits: Splits,
    device: torch.device,
    resume: bool,
    log: Callable[[str], None],
    is_main: bool,
) -> tuple[Seq2SeqBundle, TrainerState, torch.optim.Optimizer, object]:
    """Bundle, counters, optimizer and plateau schedule (or None): fresh, or ``last``'s."""
    tc = cfg.train
    if resume:
        bundle = resumed_bundle(cfg, device, log)
    else:
        bundle = new_bundle(cfg, splits, device, is_main)
    bundle.config = cfg  # train/decode settings of this run win over the saved ones
    optimizer = adam(bundle.model.parameters(), tc.lr)
    metric = task_metric(cfg.data)
    # the other schedules set the rate before every update (the trainer's _set_lr)
    plateau = tc.scheduler == "plateau"
    scheduler = schedules.plateau(optimizer, tc, metric.higher_is_better) if plateau else None
    state = (
        restore_seq2seq(cfg.run_dir / "last", optimizer, scheduler, metric.key)
        if resume
        else TrainerState()
    )
    return bundle, state, optimizer, scheduler


def config_to_resume(
    asked: ExperimentConfig, overrides: list[str], source: str
) -> tuple[ExperimentConfig, str | None]:
    """The config ``attnkit train CONFIG --resume`` goes on with: the one saved in
    ``run_dir/last`` (``run_dir`` from ``asked``), with the keys this call's ``overrides`` name
    taken from ``asked``; and a line naming what of ``source`` differs and is left
    (:func:`attnkit.training.resume_config.request`)."""
    last = _last(asked)
    try:
        saved = experiment_from_dict(ckpt.read_config(last), source=str(last / "config.yaml"))
    except AttnkitError as exc:
        raise CheckpointError(str(exc)) from None
    merged, note = resume_config.request(
        _comparable(saved),
        experiment_to_dict(asked),
        overrides,
        resume_config.SEQ2SEQ,
        last,
        source,
    )
    return experiment_from_dict(merged, source=f"{last / 'config.yaml'} with --set"), note


def _last(cfg: ExperimentConfig) -> Path:
    last = cfg.run_dir / "last"
    recover_before_resume(cfg.run_dir)  # a save a crash interrupted: put back first
    if not last.exists():
        raise CheckpointError(f"{last}: nothing to resume from (train once without --resume)")
    return last


def _comparable(saved: ExperimentConfig) -> dict:
    """A checkpoint's config as a mapping to compare with this run's: data paths saved relative
    (before they were stored absolute) are read from the current directory, as they were."""
    saved = copy.deepcopy(saved)
    resolve_data_paths(saved.data, None, (), "data")
    return experiment_to_dict(saved)


def training_examples(sides: TextSides, splits: Splits, cfg: ExperimentConfig) -> list:
    """The training pairs as token ids, cut or skipped as ``data.overlong`` says."""
    d = cfg.data
    return encode_pairs(
        splits.train,
        sides.src_tokenizer,
        sides.tgt_tokenizer,
        sides.src_vocab,
        sides.tgt_vocab,
        d.max_src_len,
        d.max_tgt_len,
        d.overlong,
        source_name=f"{d.task} train",
        copy=copies(cfg),
    )


def copies(cfg: ExperimentConfig) -> bool:
    """Whether the model of ``cfg`` copies source words (``model.copy``, RNN models only)."""
    return bool(getattr(cfg.model, "copy", False))


def checkpoint_bytes(model: torch.nn.Module) -> int:
    """About the size of one checkpoint: the weights and Adam's two moments."""
    return 3 * sum(t.numel() * t.element_size() for t in model.state_dict().values())
