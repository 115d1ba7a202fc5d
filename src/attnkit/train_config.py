"""The ``train:`` section of every family, defined once: :data:`KEYS`.

Each key has one type, one rule and one meaning wherever it applies, and a row per family that
has it: its default there (and where the words differ, what it means there). A key a family lacks
is not a key of that family's section: its files are refused with the valid keys listed, and its
checkpoints never held it. :func:`train_config_class` makes a family's ``TrainConfig`` dataclass
from the table (its keys in the table's order, which is the order each family's checkpoints have
always saved them in), so the generic reading and writing of :mod:`attnkit.config` serve every
family alike, and a new family is one more column.

The seq2seq ``TrainConfig`` is :class:`attnkit.experiment.TrainConfig`, the vision one
:class:`attnkit.training.vision_config.TrainConfig`.
"""

from __future__ import annotations

import dataclasses
from typing import Any, NamedTuple

from attnkit.accel.backend import BACKENDS
from attnkit.config import Rule, above, at_least, between, check_values, not_below
from attnkit.errors import ConfigError

SEQ2SEQ, VISION, MEMNET = "seq2seq", "vision", "memnet"

_THREADS: Rule = (lambda v: v is None or v >= 0, "at least 1, or 0 or null for torch's default")


class Row(NamedTuple):
    """A key in one family: its default, and what it means there."""

    default: Any
    meaning: str
    type: Any = None  # where this family's type differs from the key's
    rule: Rule | None = None  # where this family's rule differs from the key's


class Key(NamedTuple):
    """A ``train:`` key: its type, its rule (None: any value of the type) and its families."""

    type: Any
    rule: Rule | None
    rows: dict[str, Row]


def _rows(**rows: tuple) -> dict[str, Row]:
    return {family: Row(*row) for family, row in rows.items()}


#: every ``train:`` key of every family, in the order the sections list them
KEYS: dict[str, Key] = {
    "epochs": Key(
        int,
        at_least(1),
        _rows(
            seq2seq=(30, "most passes over the training data"),
            vision=(50, "Most epochs (passes over the training images) to run."),
            memnet=(100, "Most epochs (passes over the training questions); the paper: 100."),
        ),
    ),
    "batch_size": Key(
        int,
        at_least(1),
        _rows(
            seq2seq=(
                64,
                "sentences per batch (or use max_tokens)",
                int | None,
                at_least(1, null=True),
            ),
            vision=(128, "Images per optimiser step."),
            memnet=(32, "Questions per update (the paper: 32)."),
        ),
    ),
    "max_tokens": Key(
        int | None,
        at_least(1, null=True),
        _rows(seq2seq=(None, "padded tokens per batch; overrides batch_size")),
    ),
    "eval_batch_size": Key(
        int,
        at_least(1),
        _rows(
            vision=(1000, "Images per forward pass when measuring dev/test error."),
            memnet=(1000, "Questions per forward pass when scoring dev or test."),
        ),
    ),
    "lr": Key(
        float,
        above(0),
        _rows(
            seq2seq=(0.001, "Adam learning rate (the peak, after warm-up)"),
            vision=(1e-3, "Adam learning rate at the start of the schedule."),
            memnet=(0.01, "SGD learning rate (the paper: 0.01)."),
        ),
    ),
    "clip": Key(
        float | None,
        not_below(0, null=True),
        _rows(
            seq2seq=(1.0, "gradient-norm clipping (0 or null = off)"),
            vision=(5.0, "Clip the global gradient norm to this value (0 or null: no clipping)."),
            memnet=(
                40.0,
                "Clip the global gradient norm to this value (the paper: 40; 0 or null: off).",
            ),
        ),
    ),
    "max_bad_updates": Key(
        int,
        at_least(1),
        _rows(
            seq2seq=(
                20,
                "an update with a NaN/inf loss or gradient norm is skipped; this many in a row "
                "stop the run",
            ),
            vision=(
                20,
                "Steps with a NaN/inf loss or gradient norm are skipped; this many in a row end "
                "the run.",
            ),
            memnet=(
                20,
                "Updates with a NaN/inf loss or gradient norm are skipped; this many in a row "
                "end the run.",
            ),
        ),
    ),
    "label_smoothing": Key(
        float, between(0, 1), _rows(seq2seq=(0.0, "label smoothing of the cross-entropy loss"))
    ),
    "weight_decay": Key(float, not_below(0), _rows(vision=(0.0, "Adam weight decay (L2)."))),
    "scheduler": Key(
        str,
        None,
        _rows(
            seq2seq=("plateau", "plateau | cosine | constant | noam (attnkit.training.schedules)"),
            vision=(
                "cosine",
                "cosine: decay to min_lr over the planned epochs; step: multiply by lr_gamma "
                "every lr_step_epochs; noam; constant (:mod:`attnkit.training.schedules`).",
            ),
            memnet=(
                "step",
                "step: multiply by lr_gamma every lr_step_epochs (the paper halves it every 25); "
                "constant.",
            ),
        ),
    ),
    "lr_factor": Key(
        float,
        (lambda v: 0 < v < 1, "in (0, 1)"),  # torch's plateau schedule refuses >= 1
        _rows(seq2seq=(0.5, "plateau: multiply the LR by this ...")),
    ),
    "lr_patience": Key(
        int,
        at_least(0),
        _rows(seq2seq=(1, "... after this many evaluations without improvement")),
    ),
    "min_lr": Key(
        float,
        not_below(0),
        _rows(
            seq2seq=(1.0e-5, "plateau: never below this; cosine: where it ends"),
            vision=(1e-5, "Cosine: where the rate ends."),
        ),
    ),
    "lr_step_epochs": Key(
        int,
        at_least(1),
        _rows(
            vision=(20, "Step schedule: epochs between decays."),
            memnet=(25, "Step schedule: epochs between decays."),
        ),
    ),
    "lr_gamma": Key(
        float,
        above(0),
        _rows(
            vision=(0.5, "Step schedule: decay factor."),
            memnet=(0.5, "Step schedule: decay factor."),
        ),
    ),
    "warmup_steps": Key(
        int,
        at_least(0),
        _rows(
            seq2seq=(
                0,
                "linear warm-up over this many updates (constant, cosine; noam rises over them, "
                "then decays)",
            ),
            vision=(
                0,
                "Linear warm-up over this many updates (noam: its rise, then 1/sqrt decay).",
            ),
            memnet=(0, "Linear warm-up over this many updates."),
        ),
    ),
    "patience": Key(
        int | None,
        at_least(1, null=True),  # null: no early stopping
        _rows(
            seq2seq=(
                5,
                "early stopping: evaluations without improvement (None = never stop early)",
            ),
            vision=(
                20,
                "Early stopping: stop after this many epochs without a lower dev error "
                "(null: never).",
            ),
            memnet=(
                None,
                "Early stopping: stop after this many epochs without a lower dev error "
                "(null: never).",
            ),
        ),
    ),
    "average_checkpoints": Key(
        int,
        at_least(0),
        _rows(
            seq2seq=(
                0,
                "N >= 2: keep the N best evaluations in run_dir/top, average them into "
                "run_dir/averaged",
            )
        ),
    ),
    "eval_every": Key(
        int,
        at_least(0),
        _rows(seq2seq=(0, "updates between dev evaluations (0 = once per epoch)")),
    ),
    "max_minutes": Key(
        float | None,
        above(0, null=True),
        _rows(
            seq2seq=(None, "time budget for training"),
            vision=(
                None,
                "Wall-clock budget for training (null: none); training stops when it is spent.",
            ),
            memnet=(
                None,
                "Wall-clock budget for training (null: none); training stops when it is spent.",
            ),
        ),
    ),
    "fit_schedule_to_budget": Key(
        bool,
        None,
        _rows(
            vision=(
                True,
                "With max_minutes: shorten the planned epochs (and the LR schedule) to what the "
                "budget allows.",
            )
        ),
    ),
    "seed": Key(
        int,
        None,
        _rows(
            seq2seq=(1, "seed of the initialisation, the batch order and dropout"),
            vision=(0, "Seed of the model initialisation and of the batch order."),
            memnet=(0, "Seed of the initialisation, the batch order and the random noise."),
        ),
    ),
    "device": Key(
        str,
        None,
        _rows(
            seq2seq=("auto", "auto | cpu | cuda"),
            vision=("auto", "auto (CUDA when available), cpu or cuda."),
            memnet=("cpu", "cpu (the model is tiny: a GPU gains nothing), auto or cuda."),
        ),
    ),
    "threads": Key(
        int | None,
        _THREADS,
        _rows(
            seq2seq=(0, "torch CPU threads (0 or null = torch's default)"),
            vision=(None, "CPU threads for torch (null or 0: torch's default)."),
            memnet=(
                1,
                "CPU threads for torch (null or 0: torch's default; the model is tiny: 1 is "
                "fastest).",
            ),
        ),
    ),
    "backend": Key(
        str,
        None,
        _rows(
            seq2seq=(
                "auto",
                "how the model is computed (attnkit.accel.backend): auto | reference | fused | "
                "native | compile",
            ),
            vision=(
                "auto",
                "How the training step is computed: auto (eager, with attnkit's C kernels where "
                "they fit: the additive attention scores on a CPU), reference (plain eager "
                "PyTorch, no kernels) or compile (torch.compile: fewer, fused kernels; the first "
                "steps compile for a minute).",
            ),
        ),
    ),
    "progress": Key(
        bool,
        None,
        _rows(
            seq2seq=(True, "a tqdm bar, drawn only when stderr is a terminal"),
            vision=(
                True,
                "Show a tqdm progress bar (loss, accuracy, images/s) on stderr, when it is a "
                "terminal.",
            ),
            memnet=(False, "Show a tqdm progress bar on stderr, when it is a terminal."),
        ),
    ),
    "verbose": Key(
        bool,
        None,
        _rows(
            vision=(True, "Print one summary line per epoch on stderr."),
            memnet=(True, "Print one summary line per epoch on stderr."),
        ),
    ),
    "linear_start": Key(
        int,
        at_least(0),
        _rows(
            memnet=(
                20,
                "Linear start: the first N epochs train without the softmax of the memory hops "
                "(the paper's LS; 0: off).",
            )
        ),
    ),
    "tensorboard": Key(
        bool,
        None,
        _rows(
            seq2seq=(
                True,
                "event files in run_dir/tensorboard: scalars, dev metrics, attention",
            ),
            vision=(
                True,
                "TensorBoard event files in OUT/tensorboard: scalars, dev metrics, attention "
                "pictures.",
            ),
            memnet=(
                True,
                "TensorBoard event files in OUT/tensorboard: scalars, dev figures, hop-by-hop "
                "attention.",
            ),
        ),
    ),
}

#: the values a key takes, where they are a list, per family
CHOICES: dict[str, dict[str, tuple]] = {
    SEQ2SEQ: {
        "scheduler": ("plateau", "cosine", "constant", "noam"),
        "device": ("auto", "cpu", "cuda"),
        "backend": BACKENDS,
    },
    VISION: {
        "scheduler": ("cosine", "step", "noam", "constant"),
        "device": ("auto", "cpu", "cuda"),
        "backend": ("auto", "reference", "compile"),
    },
    MEMNET: {"scheduler": ("step", "constant"), "device": ("auto", "cpu", "cuda")},
}


class TrainSettings:
    """What every family's ``TrainConfig`` can do beyond holding its keys."""

    FAMILY: str
    RULES: dict[str, Rule]
    DOCS: dict[str, str]  # key -> what it means in this family (the configuration reference)

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
