"""The table of every family's ``train:`` keys, one row per key and one column per family: what a
row is (:class:`Key`, :class:`Row`), the families' names, and the keys of how a model is optimised
(:data:`OPTIMISATION`). The keys of when a run stops, where it runs and what it shows, with the
whole table and the choices, are :mod:`attnkit.train_table`'s.
"""

from __future__ import annotations

from typing import Any, NamedTuple

from attnkit.config import Rule, above, at_least, between, not_below

SEQ2SEQ, VISION, POINTER, GRAPH, TEXT = "seq2seq", "vision", "pointer", "graph", "text"
MEMNET = "memnet"

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


#: the keys of how a model is optimised: batches, rate and its schedule, clipping
OPTIMISATION: dict[str, Key] = {
    "epochs": Key(
        int,
        at_least(1),
        _rows(
            pointer=(50, "most passes over the training instances"),
            seq2seq=(30, "most passes over the training data"),
            vision=(50, "Most epochs (passes over the training images) to run."),
            graph=(1000, "Most epochs: each is one full-graph update and one dev evaluation."),
            text=(10, "Most epochs (passes over the training sentences or phrases) to run."),
            memnet=(100, "Most epochs (passes over the training questions); the paper: 100."),
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
            pointer=(1000, "instances per forward pass when scoring dev/test"),
            vision=(1000, "Images per forward pass when measuring dev/test error."),
            text=(256, "Sentences per forward pass when scoring dev and test."),
            memnet=(1000, "Questions per forward pass when scoring dev or test."),
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
            memnet=(0.01, "SGD learning rate (the paper: 0.01)."),
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
            memnet=(
                40.0,
                "Clip the gradient norm to this value (the paper: 40; 0 or null: off): all the "
                "weights' together, or each weight's own with clip_each.",
            ),
        ),
    ),
    "clip_each": Key(
        bool,
        None,
        _rows(
            memnet=(
                False,
                "Clip each weight matrix's gradient to train.clip apart (its largest singular "
                "value, as the paper's reference code does) instead of all of them together.",
            ),
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
            memnet=(
                20,
                "Updates with a NaN/inf loss or gradient norm are skipped; this many in a row end "
                "the run.",
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
            memnet=(
                "step",
                "step: multiply by lr_gamma every lr_step_epochs (the paper halves it every 25); "
                "constant.",
            ),
            pointer=(
                "constant",
                "constant; cosine: decay to min_lr by the end of the planned epochs or of "
                "max_minutes, whichever comes first",
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
            pointer=(1e-5, "cosine: where the rate ends"),
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
            text=(
                0,
                "Linear warm-up over this many updates (noam: its rise, then 1/sqrt decay).",
            ),
            memnet=(0, "Linear warm-up over this many updates."),
        ),
    ),
}
