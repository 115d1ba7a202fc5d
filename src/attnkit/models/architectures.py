"""The seq2seq architectures, by ``model.arch``: its config class and its model class.

``rnn`` (the default, and what a config without ``arch`` means) is the RNN encoder-decoder of
:mod:`attnkit.models.seq2seq`; ``transformer`` is :mod:`attnkit.models.transformer`. Both offer
``encode``/``decoder.step``/``forward``, so training, decoding, ensembles and the translator take
either.
"""

from __future__ import annotations

import dataclasses
from typing import Any, NamedTuple

from torch import nn

from attnkit.config import from_dict, join_key, shown
from attnkit.errors import ConfigError
from attnkit.models.seq2seq import Seq2Seq, Seq2SeqConfig
from attnkit.models.transformer import Transformer, TransformerConfig


class Architecture(NamedTuple):
    config: type
    model: type


ARCHITECTURES: dict[str, Architecture] = {
    "rnn": Architecture(Seq2SeqConfig, Seq2Seq),
    "transformer": Architecture(TransformerConfig, Transformer),
}
DEFAULT_ARCH = "rnn"

#: every model config class (what ``ExperimentConfig.model`` may hold)
ModelConfig = Seq2SeqConfig | TransformerConfig


def model_config_from_dict(section: Any, where: str = "config: model") -> ModelConfig:
    """A ``model:`` mapping -> the config class of its ``arch``; a key of another architecture is
    a ConfigError naming this one's keys."""
    if section is None:
        section = {}
    if not isinstance(section, dict):
        raise ConfigError(
            f"{where}: expected a mapping of keys to values, got {type(section).__name__}"
        )
    arch = section.get("arch", DEFAULT_ARCH)
    if not isinstance(arch, str) or arch not in ARCHITECTURES:
        raise ConfigError(
            f"{join_key(where, 'arch')}: {shown(arch)} is not one of {', '.join(ARCHITECTURES)}"
        )
    cls = ARCHITECTURES[arch].config
    own = [f.name for f in dataclasses.fields(cls)]
    others = {f.name for a in ARCHITECTURES.values() for f in dataclasses.fields(a.config)}
    for name in section:
        if name not in own and name in others:
            raise ConfigError(
                f"{join_key(where, name)}: not a key of arch {arch} (its keys: {', '.join(own)})"
            )
    return from_dict(cls, section, where)


def build_model(cfg: ModelConfig, src_vocab_size: int, tgt_vocab_size: int) -> nn.Module:
    """A freshly initialised model of ``cfg.arch``."""
    return ARCHITECTURES[cfg.arch].model(cfg, src_vocab_size, tgt_vocab_size)


#: the model classes that have a checkpoint of their own (an ensemble has none)
MODEL_CLASSES = tuple(a.model for a in ARCHITECTURES.values())
