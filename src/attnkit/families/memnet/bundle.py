"""A memory-network checkpoint read back: its config, its vocabulary (``vocab.json``) and its
model, every part checked before the weights are allocated."""

from __future__ import annotations

from pathlib import Path

import torch

from attnkit import checkpoint as ckpt
from attnkit.checkpoint import checkpoint_dir
from attnkit.checkpoint.validate import build_checked
from attnkit.data.babi_vectors import BabiVocab
from attnkit.device import resolve_device
from attnkit.errors import ConfigError
from attnkit.families.memnet.config import FAMILY, MemnetConfig, parse_config
from attnkit.models.memn2n import MemN2N

#: the vocabulary's file in a checkpoint
VOCAB_FILE = "vocab.json"


def load_memnet_model(
    path: str | Path, device: str | torch.device = "cpu"
) -> tuple[MemnetConfig, BabiVocab, MemN2N]:
    """(config, vocabulary, model in eval mode) of a memory-network checkpoint (or a run
    directory holding ``best/``); every part checked before the weights are allocated."""
    directory = checkpoint_dir(path)
    ckpt.read_meta(directory, FAMILY)
    cfg = parse_config(ckpt.read_config(directory), str(directory / "config.yaml"))
    vocab = read_vocab(directory, cfg)
    # the file's shapes checked before any memory is allocated
    model = build_checked(directory, lambda: MemN2N(cfg.model, len(vocab), cfg.data.memory_size))
    device = resolve_device(device) if isinstance(device, str) else device
    return cfg, vocab, model.to(device).eval()


def read_vocab(directory: Path, cfg: MemnetConfig) -> BabiVocab:
    """A checkpoint's ``vocab.json``, checked against its config's memory size."""
    vocab_path = directory / VOCAB_FILE
    vocab = BabiVocab.from_json(ckpt.read_json(vocab_path), str(vocab_path))
    if vocab.memory_size != cfg.data.memory_size:
        raise ConfigError(
            f"{vocab_path}: memory_size {vocab.memory_size} is not the config's "
            f"{cfg.data.memory_size}"
        )
    return vocab
