"""The ``train:`` keys, defined once for every family: :data:`KEYS`.

Each key has one type, one rule and one general meaning wherever it applies (:class:`Key`). A
family says which keys its section has, with its default there and, where its words (or, rarely,
its type or rule) differ, its own: its column, a ``{key: Row}`` mapping in its own folder
(``families/<name>/config.py``). :func:`train_config_class` makes the family's ``TrainConfig``
dataclass from that column, its keys in :data:`KEYS`'s order (the order each family's checkpoints
have always saved them in, whatever order the column lists them), so the generic reading and
writing of :mod:`attnkit.config` serve every family alike, and a new family is one more column.

A key a family lacks is not a key of that family's section: its files are refused with the valid
keys listed, and its checkpoints never held it.
"""

from __future__ import annotations

import dataclasses
from typing import Any, NamedTuple

from attnkit.config import Rule, above, at_least, between, check_values, not_below
from attnkit.errors import ConfigError


class Key(NamedTuple):
    """A ``train:`` key: its type, its rule (None: any value of the type) and what it means."""

    type: Any
    rule: Rule | None
    meaning: str


class Row(NamedTuple):
    """A key in one family's column: its default there, and what differs from :class:`Key`."""

    default: Any
    meaning: str | None = None  # None: the key's general meaning
    type: Any = None  # where this family's type differs from the key's
    rule: Rule | None = None  # where this family's rule differs from the key's


_THREADS: Rule = (lambda v: v is None or v >= 0, "at least 1, or 0 or null for torch's default")
_SEED: Rule = (lambda v: 0 <= v < 2**32, "a whole number in [0, 4294967295]")  # numpy's range

#: every ``train:`` key, in the order every family's checkpoints save them: first how a model is
#: optimised (batches, rate and its schedule, clipping), then when a run stops, where it runs and
#: what it shows
KEYS: dict[str, Key] = {
    "epochs": Key(int, at_least(1), "Most passes over the training data."),
    "batch_size": Key(int, at_least(1), "Examples per update."),
    "max_tokens": Key(
        int | None, at_least(1, null=True), "padded tokens per batch; overrides batch_size"
    ),
    "eval_batch_size": Key(int, at_least(1), "Examples per forward pass when scoring dev/test."),
    "lr": Key(float, above(0), "Learning rate (the peak of its schedule)."),
    "clip": Key(
        float | None,
        not_below(0, null=True),
        "Clip the global gradient norm to this value (0 or null: no clipping).",
    ),
    "clip_each": Key(bool, None, "Clip each weight's gradient apart instead of all together."),
    "max_bad_updates": Key(
        int,
        at_least(1),
        "Updates with a NaN/inf loss or gradient norm are skipped; this many in a row end the run.",
    ),
    "label_smoothing": Key(float, between(0, 1), "label smoothing of the cross-entropy loss"),
    "weight_decay": Key(float, not_below(0), "Adam weight decay (L2)."),
    "scheduler": Key(str, None, "How the rate changes (attnkit.training.schedules)."),
    "lr_factor": Key(
        float,
        (lambda v: 0 < v < 1, "in (0, 1)"),  # torch's plateau schedule refuses >= 1
        "plateau: multiply the LR by this ...",
    ),
    "lr_patience": Key(int, at_least(0), "... after this many evaluations without improvement"),
    "min_lr": Key(float, not_below(0), "Cosine: where the rate ends."),
    "lr_step_epochs": Key(int, at_least(1), "Step schedule: epochs between decays."),
    "lr_gamma": Key(float, above(0), "Step schedule: decay factor."),
    "warmup_steps": Key(
        int,
        at_least(0),
        "Linear warm-up over this many updates (noam: its rise, then 1/sqrt decay).",
    ),
    "patience": Key(
        int | None,
        at_least(1, null=True),  # null: no early stopping
        "Early stopping: stop after this many evaluations without a better dev score (null: "
        "never).",
    ),
    "average_checkpoints": Key(
        int, at_least(0), "N >= 2: keep the N best evaluations and average them."
    ),
    "eval_every": Key(int, at_least(0), "updates between dev evaluations (0 = once per epoch)"),
    "max_minutes": Key(
        float | None,
        above(0, null=True),
        "Wall-clock budget for training (null: none); training stops when it is spent.",
    ),
    "fit_schedule_to_budget": Key(
        bool, None, "With max_minutes: shorten the planned epochs to what the budget allows."
    ),
    "seed": Key(int, _SEED, "Seed of the initialisation and of the batch order."),
    "device": Key(str, None, "auto (CUDA when available), cpu or cuda."),
    "threads": Key(int | None, _THREADS, "CPU threads for torch (null or 0: torch's default)."),
    "backend": Key(str, None, "How the training step is computed (attnkit.accel.backend)."),
    "precision": Key(
        str,
        None,
        "The training forward's precision (attnkit.training.precision): fp32, bf16 (autocast; "
        "CPU or CUDA) or fp16 (autocast with loss scaling; CUDA only). Weights stay float32.",
    ),
    "progress": Key(
        bool,
        None,
        "A progress bar on stderr when it is a terminal (loss, accuracy, items/s, rate), or one "
        "updating line in a Jupyter notebook, with each dev evaluation's line shown on it.",
    ),
    "verbose": Key(
        bool,
        None,
        "Print the run's lines on stderr: its setup, a line per dev evaluation (where the run "
        "is, the dev score, the training loss and accuracy, the rate, the time) and its last "
        "line. train.log keeps them either way.",
    ),
    "linear_start": Key(int, at_least(0), "The first N epochs train without the softmax (0: off)."),
    "restart_after_linear_start": Key(
        bool, None, "Count the step decay from the end of linear start."
    ),
    "tensorboard": Key(
        bool,
        None,
        "TensorBoard event files in OUT/tensorboard: scalars, dev metrics, attention pictures.",
    ),
}


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


def train_config_class(
    family: str, column: dict[str, Row], choices: dict[str, tuple], module: str
) -> type:
    """The ``TrainConfig`` dataclass of ``family``: the keys of its ``column`` (a key of
    :data:`KEYS` -> its :class:`Row` there) in :data:`KEYS`'s order, typed, with its defaults,
    ``choices`` (key -> the values it takes), rules and meanings; ``module``: where the class is
    published. A key outside :data:`KEYS`, or a choice of a key the column lacks, is a
    ValueError."""
    if unknown := sorted(set(column) - KEYS.keys()):
        raise ValueError(
            f"{family}: {', '.join(unknown)}: no such train key (attnkit.train_config)"
        )
    if unknown := sorted(set(choices) - column.keys()):
        raise ValueError(f"{family}: choices of {', '.join(unknown)}, a key its column lacks")
    fields, rules, docs = [], {}, {}
    for name, key in KEYS.items():
        row = column.get(name)
        if row is None:
            continue
        fields.append((name, row.type or key.type, dataclasses.field(default=row.default)))
        rule = row.rule or key.rule
        if rule is not None:
            rules[name] = rule
        docs[name] = row.meaning or key.meaning
    namespace = {
        "__doc__": f"``train:`` of a {family} experiment: how to optimise, when to stop.",
        "FAMILY": family,
        "CHOICES": dict(choices),
        "RULES": rules,
        "DOCS": docs,
    }
    cls = dataclasses.make_dataclass(
        "TrainConfig", fields, bases=(TrainSettings,), namespace=namespace
    )
    cls.__module__ = module  # where it is published: pickle and the reference find it there
    return cls
