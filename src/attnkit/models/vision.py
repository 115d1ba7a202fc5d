"""The vision model types by name (``model.type`` of a ``family: vision`` experiment): each one's
config class, the tasks it reads and how it is built.

What the training, scoring and pictures of each type need beyond building it lives with the
vision family, which also builds a checkpoint's model from this registry alone.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from torch import nn

from attnkit.models import show_attend_tell as sat
from attnkit.models.attention_pooling import AttentionPoolingClassifier, PoolingConfig
from attnkit.models.ram import RAMConfig, RecurrentAttentionModel

#: the MNIST-based tasks a one-digit classifier reads
DIGIT_TASKS = ("mnist", "translated", "cluttered")
CLASSES = 10  # digits


@dataclass(frozen=True)
class VisionModelType:
    """One ``model.type``: its config dataclass, the ``data.task`` values it reads, its builder."""

    config_cls: type
    tasks: tuple[str, ...]
    build: Callable[[object], nn.Module]  # model config -> a fresh model


def _ram(m: RAMConfig) -> nn.Module:
    return RecurrentAttentionModel(
        m.glimpses,
        m.patch,
        m.scales,
        m.scale_factor,
        1,  # grey images: one channel
        m.glimpse_hidden,
        m.location_hidden,
        m.hidden,
        m.core,
        m.std,
        CLASSES,
        m.detach_policy_state,
    )


def _reader(m: sat.ReaderConfig) -> nn.Module:
    return sat.ShowAttendTell(m.channels, m.embed, m.hidden, m.attention_dim, m.gate, m.dropout)


def _pooling(m: PoolingConfig) -> nn.Module:
    return AttentionPoolingClassifier(m.channels, m.attention_hidden, m.dropout)


#: model.type -> its config class, tasks and builder
VISION_MODELS: dict[str, VisionModelType] = {
    "ram": VisionModelType(RAMConfig, DIGIT_TASKS, _ram),
    "show_attend_tell": VisionModelType(sat.ReaderConfig, ("strips",), _reader),
    "attention_pooling": VisionModelType(PoolingConfig, DIGIT_TASKS, _pooling),
}
