"""The ``train:`` section of every family, defined once: :data:`KEYS`.

Each key has one type, one rule and one meaning wherever it applies, and a row per family that
has it: its default there (and where the words differ, what it means there). A key a family lacks
is not a key of that family's section: its files are refused with the valid keys listed, and its
checkpoints never held it. :func:`train_config_class` makes a family's ``TrainConfig`` dataclass
from the table (its keys in the table's order, which is the order each family's checkpoints have
always saved them in), so the generic reading and writing of :mod:`attnkit.config` serve every
family alike, and a new family is one more column.

The table itself is :mod:`attnkit.train_table` (with :mod:`attnkit.train_keys`). The seq2seq
``TrainConfig`` is :class:`attnkit.experiment.TrainConfig`, the vision one
:class:`attnkit.vision_experiment.TrainConfig`.
"""

from __future__ import annotations

import dataclasses

from attnkit.config import Rule, check_values
from attnkit.errors import ConfigError
from attnkit.train_keys import (  # noqa: F401 (the table's names are also this module's)
    GRAPH,
    MEMNET,
    POINTER,
    SEQ2SEQ,
    TEXT,
    VISION,
    Key,
    Row,
)
from attnkit.train_table import CHOICES, KEYS


class TrainSettings:
    """What every family's ``TrainConfig`` can do beyond holding its keys."""

    FAMILY: str
    RULES: dict[str, Rule]
    DOCS: dict[str, str]  # key -> what it means in this family (the configuration reference)
    #: keys only some schedules read (a report leaves the others out: attnkit.config.applicable)
    READ_ONLY_WITH = {
        "lr_factor": ("scheduler", ("plateau",)),
        "lr_patience": ("scheduler", ("plateau",)),
        "lr_step_epochs": ("scheduler", ("step",)),
        "lr_gamma": ("scheduler", ("step",)),
        "min_lr": ("scheduler", ("plateau", "cosine")),
        "warmup_steps": ("scheduler", ("constant", "cosine", "step", "noam")),
    }

    def validate(self, where: str) -> None:
        if "max_tokens" in self.RULES and self.batch_size is None and self.max_tokens is None:
            raise ConfigError(f"{where}: set batch_size or max_tokens")
        check_values(self, where, self.RULES)

    @property
    def compiled(self) -> bool:
        """True when the training step goes through torch.compile."""
        return self.backend == "compile"


def keys_of(family: str) -> list[str]:
    """The ``train:`` keys of ``family``, in the order its section lists them."""
    return [name for name, key in KEYS.items() if family in key.rows]


def train_config_class(family: str, module: str) -> type:
    """The ``TrainConfig`` dataclass of ``family``: its keys of :data:`KEYS`, typed, with its
    defaults, choices, rules and meanings (``module``: where the class is published)."""
    fields, rules, docs = [], {}, {}
    for name in keys_of(family):
        key = KEYS[name]
        row = key.rows[family]
        fields.append((name, row.type or key.type, dataclasses.field(default=row.default)))
        rule = row.rule or key.rule
        if rule is not None:
            rules[name] = rule
        docs[name] = row.meaning
    namespace = {
        "__doc__": f"``train:`` of a {family} experiment: how to optimise, when to stop.",
        "FAMILY": family,
        "CHOICES": CHOICES[family],
        "RULES": rules,
        "DOCS": docs,
    }
    cls = dataclasses.make_dataclass(
        "TrainConfig", fields, bases=(TrainSettings,), namespace=namespace
    )
    cls.__module__ = module  # where it is published: pickle and the reference find it there
    return cls
