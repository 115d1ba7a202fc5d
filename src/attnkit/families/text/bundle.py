"""A text-classification run's checkpoints: weights, config, vocabulary, labels, trainer
counters, optimizer and RNG; and :func:`load_text_model`, a checkpoint's model ready to use.

Beside the files every checkpoint has (:mod:`attnkit.checkpoint`), a text checkpoint holds
``vocab.json`` (the words, ids in order) and ``labels.json`` (the class names, in order).
``OUT/best`` holds what evaluating and plotting read; ``OUT/last`` also the optimizer and the RNG
that ``--resume`` needs. The counters are the run's :class:`~attnkit.training.state.TrainerState`
under the names of :data:`~attnkit.training.state.TEXT`.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import torch
from torch import nn

from attnkit import checkpoint as ckpt
from attnkit.checkpoint import checkpoint_dir
from attnkit.checkpoint.validate import build_checked
from attnkit.data.vocab import Vocab
from attnkit.device import resolve_device
from attnkit.errors import CheckpointError
from attnkit.families.text.config import FAMILY, TextConfig, parse_config
from attnkit.models.text_classifier import TextClassifier
from attnkit.training.guard import check_weights
from attnkit.training.resumable import restore as restore_resumable
from attnkit.training.resumable import trainer_files
from attnkit.training.state import TrainerState

VOCAB_FILE, LABELS_FILE = "vocab.json", "labels.json"
MAX_CLASSES = 10_000


@dataclass
class TextBundle:
    """What a text checkpoint holds: its config, vocabulary, class names and model."""

    config: TextConfig
    vocab: Vocab
    labels: list[str]
    model: TextClassifier


def build_model(cfg: TextConfig, vocab: Vocab, labels: list[str]) -> TextClassifier:
    return TextClassifier(cfg.model, len(vocab), len(labels))


def save(
    directory: Path,
    bundle: TextBundle,
    optimizer,
    state: TrainerState,
    resumable: bool = True,
) -> None:
    """Write a checkpoint; ``resumable`` adds the optimizer and the RNG (``last``)."""
    model = bundle.model
    check_weights(model, f"epoch {state.epoch} (step {state.step}): {directory} not written")
    trainer, tensors = trainer_files(state, optimizer if resumable else None)
    _write(directory, bundle, trainer, tensors)


def _write(directory: Path, bundle: TextBundle, trainer: dict, tensors: dict | None) -> Path:
    def extra(tmp: Path) -> None:
        bundle.vocab.save(tmp / VOCAB_FILE)
        (tmp / LABELS_FILE).write_text(json.dumps(bundle.labels, ensure_ascii=False), "utf-8")

    ckpt.write_checkpoint(
        directory,
        FAMILY,
        bundle.model.state_dict(),
        bundle.config.to_dict(),
        trainer,
        tensors,
        extra=extra,
    )
    return Path(directory)


class AveragingView:
    """A bundle as checkpoint averaging (:class:`~attnkit.training.averaging.CheckpointAverager`)
    keeps it: ``model``, and ``save(directory, meta)`` writing the weights, config, vocabulary
    and labels with ``meta`` as the ``trainer.json`` (no optimizer: these are not resumed)."""

    def __init__(self, bundle: TextBundle):
        self.bundle = bundle

    @property
    def model(self) -> TextClassifier:
        return self.bundle.model

    def save(self, directory: Path, meta: dict) -> Path:
        return _write(directory, self.bundle, meta, None)


def restore(directory: Path, model: nn.Module, optimizer) -> TrainerState:
    """Weights, optimizer, counters and RNG of ``directory``, each checked before it is loaded."""
    return restore_resumable(directory, FAMILY, model, optimizer)


def read_labels(directory: Path) -> list[str]:
    """``labels.json``: a list of distinct strings, or a CheckpointError naming the file."""
    path = directory / LABELS_FILE
    labels = ckpt.read_json(path)
    if (
        not isinstance(labels, list)
        or not 2 <= len(labels) <= MAX_CLASSES
        or not all(isinstance(x, str) for x in labels)
        or len(set(labels)) != len(labels)
    ):
        raise CheckpointError(f"{path}: expected a list of 2 or more distinct class names")
    return labels


def load_text_model(model_dir: str | Path, device: str | torch.device = "cpu") -> TextBundle:
    """The :class:`TextBundle` of a text checkpoint (or a run holding ``best/``), the model in
    eval mode on ``device``."""
    directory = checkpoint_dir(model_dir)
    ckpt.read_meta(directory, FAMILY)
    cfg = parse_config(ckpt.read_config(directory), str(directory / "config.yaml"))
    vocab = Vocab.load(directory / VOCAB_FILE)
    labels = read_labels(directory)
    # the file's shapes checked before any memory is allocated
    model = build_checked(directory, lambda: build_model(cfg, vocab, labels))
    device = resolve_device(device) if isinstance(device, str) else device
    return TextBundle(cfg, vocab, labels, model.to(device).eval())
