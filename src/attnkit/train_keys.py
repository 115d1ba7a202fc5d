"""The table of every family's ``train:`` keys (:data:`KEYS`) and their choices
(:data:`CHOICES`): one row per key, one column per family. :mod:`attnkit.train_config` makes each
family's ``TrainConfig`` dataclass from it; a new family is one more column here.
"""

from __future__ import annotations

from typing import Any, NamedTuple

from attnkit.accel.backend import BACKENDS
from attnkit.config import Rule, above, at_least, between, not_below

SEQ2SEQ, VISION, POINTER, GRAPH, TEXT = "seq2seq", "vision", "pointer", "graph", "text"

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
            pointer=(50, "most passes over the training instances"),
            seq2seq=(30, "most passes over the training data"),
            vision=(50, "Most epochs (passes over the training images) to run."),
            graph=(1000, "Most epochs: each is one full-graph update and one dev evaluation."),
            text=(10, "Most epochs (passes over the training sentences or phrases) to run."),
        ),
    ),
    "batch_size": Key(
        int,
        at_least(1),
        _rows(
            pointer=(128, "instances per update"),
            seq2seq=(
                64,
                "sentences per batch (or use max_tokens)",
                int | None,
                at_least(1, null=True),
            ),
            vision=(128, "Images per optimiser step."),
            text=(32, "Sentences (or phrases) per update."),
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
            pointer=(1000, "instances per forward pass when scoring dev/test"),
            vision=(1000, "Images per forward pass when measuring dev/test error."),
            text=(256, "Sentences per forward pass when scoring dev and test."),
        ),
    ),
    "lr": Key(
        float,
        above(0),
        _rows(
            pointer=(1e-3, "Adam learning rate (constant)"),
            seq2seq=(0.001, "Adam learning rate (the peak, after warm-up)"),
            vision=(1e-3, "Adam learning rate at the start of the schedule."),
            graph=(0.005, "Adam learning rate (constant)."),
            text=(1e-3, "Adam learning rate at the start of the schedule."),
        ),
    ),
    "clip": Key(
        float | None,
        not_below(0, null=True),
        _rows(
            pointer=(2.0, "gradient-norm clipping (0 or null = off)"),
            seq2seq=(1.0, "gradient-norm clipping (0 or null = off)"),
            vision=(5.0, "Clip the global gradient norm to this value (0 or null: no clipping)."),
            graph=(None, "Clip the global gradient norm to this value (0 or null: no clipping)."),
            text=(5.0, "Clip the global gradient norm to this value (0 or null: no clipping)."),
        ),
    ),
    "max_bad_updates": Key(
        int,
        at_least(1),
        _rows(
            pointer=(
                20,
                "updates with a NaN/inf loss or gradient norm are skipped; this many in a row "
                "stop the run",
            ),
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
            graph=(
                20,
                "Updates with a NaN/inf loss or gradient norm are skipped; this many in a row "
                "end the run.",
            ),
            text=(
                20,
                "Updates with a NaN/inf loss or gradient norm are skipped; this many in a row "
                "end the run.",
            ),
        ),
    ),
    "label_smoothing": Key(
        float, between(0, 1), _rows(seq2seq=(0.0, "label smoothing of the cross-entropy loss"))
    ),
    "weight_decay": Key(
        float,
        not_below(0),
        _rows(
            vision=(0.0, "Adam weight decay (L2)."),
            graph=(5e-4, "Adam weight decay (L2), the GAT recipe's 5e-4."),
            text=(0.0, "Adam weight decay (L2)."),
        ),
    ),
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
            text=(
                "constant",
                "constant; cosine: decay to min_lr over the planned epochs; noam "
                "(:mod:`attnkit.training.schedules`).",
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
            text=(1e-5, "Cosine: where the rate ends."),
        ),
    ),
    "lr_step_epochs": Key(
        int, at_least(1), _rows(vision=(20, "Step schedule: epochs between decays."))
    ),
    "lr_gamma": Key(float, above(0), _rows(vision=(0.5, "Step schedule: decay factor."))),
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
            text=(
                0,
                "Linear warm-up over this many updates (noam: its rise, then 1/sqrt decay).",
            ),
        ),
    ),
    "patience": Key(
        int | None,
        at_least(1, null=True),  # null: no early stopping
        _rows(
            pointer=(
                5,
                "early stopping: evaluations without a better dev exact match (null: never)",
            ),
            seq2seq=(
                5,
                "early stopping: evaluations without improvement (None = never stop early)",
            ),
            vision=(
                20,
                "Early stopping: stop after this many epochs without a lower dev error "
                "(null: never).",
            ),
            graph=(
                100,
                "Early stopping: stop after this many epochs in which neither the dev accuracy "
                "reached its best nor the dev loss its lowest (null: never).",
            ),
            text=(
                3,
                "Early stopping: stop after this many epochs without a higher dev accuracy "
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
        _rows(
            pointer=(0, "updates between dev evaluations (0 = once per epoch)"),
            seq2seq=(0, "updates between dev evaluations (0 = once per epoch)"),
        ),
    ),
    "max_minutes": Key(
        float | None,
        above(0, null=True),
        _rows(
            pointer=(None, "time budget for training (null: none)"),
            seq2seq=(
                None,
                "time budget for training, in minutes: the run's total, its resumed parts "
                "included (2.5 on resuming a run that trained 2.2 gives 0.3 more)",
            ),
            vision=(
                None,
                "Wall-clock budget for training (null: none); training stops when it is spent. "
                "It is the run's total, its resumed parts included.",
            ),
            graph=(None, "Wall-clock budget for training (null: none)."),
            text=(
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
        (lambda v: 0 <= v < 2**32, "a whole number in [0, 4294967295]"),  # numpy's range
        _rows(
            pointer=(1, "seed of the initialisation and the batch order"),
            seq2seq=(1, "seed of the initialisation, the batch order and dropout"),
            vision=(0, "Seed of the model initialisation and of the batch order."),
            graph=(0, "Seed of the initialisation and of dropout."),
            text=(0, "Seed of the model initialisation, dropout and the batch order."),
        ),
    ),
    "device": Key(
        str,
        None,
        _rows(
            pointer=("auto", "auto | cpu | cuda"),
            seq2seq=("auto", "auto | cpu | cuda"),
            vision=("auto", "auto (CUDA when available), cpu or cuda."),
            graph=("auto", "auto (CUDA when available), cpu or cuda."),
            text=("auto", "auto (CUDA when available), cpu or cuda."),
        ),
    ),
    "threads": Key(
        int | None,
        _THREADS,
        _rows(
            pointer=(0, "torch CPU threads (0 or null = torch's default)"),
            seq2seq=(0, "torch CPU threads (0 or null = torch's default)"),
            vision=(None, "CPU threads for torch (null or 0: torch's default)."),
            graph=(None, "CPU threads for torch (null or 0: torch's default)."),
            text=(None, "CPU threads for torch (null or 0: torch's default)."),
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
            pointer=(True, "a tqdm bar, drawn only when stderr is a terminal"),
            seq2seq=(True, "a tqdm bar, drawn only when stderr is a terminal"),
            vision=(
                True,
                "Show a tqdm progress bar (loss, accuracy, images/s) on stderr, when it is a "
                "terminal.",
            ),
            text=(
                True,
                "Show a tqdm progress bar (loss, accuracy, sentences/s) on stderr, when it is a "
                "terminal.",
            ),
        ),
    ),
    "verbose": Key(
        bool,
        None,
        _rows(
            vision=(True, "Print one summary line per epoch on stderr."),
            text=(True, "Print one summary line per epoch on stderr."),
            graph=(
                True,
                "Print a line on stderr every 50 epochs, at each better dev score and at the end.",
            ),
        ),
    ),
    "tensorboard": Key(
        bool,
        None,
        _rows(
            pointer=(True, "event files in run_dir/tensorboard: loss, accuracy, dev metrics"),
            seq2seq=(
                True,
                "event files in run_dir/tensorboard: scalars, dev metrics, attention",
            ),
            vision=(
                True,
                "TensorBoard event files in OUT/tensorboard: scalars, dev metrics, attention "
                "pictures.",
            ),
            graph=(
                True,
                "TensorBoard event files in OUT/tensorboard: scalars, dev metrics, attention "
                "pictures.",
            ),
            text=(
                True,
                "TensorBoard event files in OUT/tensorboard: scalars, dev accuracy, the "
                "attention over a few dev sentences.",
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
    POINTER: {"device": ("auto", "cpu", "cuda")},
    GRAPH: {"device": ("auto", "cpu", "cuda")},
    VISION: {
        "scheduler": ("cosine", "step", "noam", "constant"),
        "device": ("auto", "cpu", "cuda"),
        "backend": ("auto", "reference", "compile"),
    },
    TEXT: {
        "scheduler": ("constant", "cosine", "noam"),
        "device": ("auto", "cpu", "cuda"),
    },
}
