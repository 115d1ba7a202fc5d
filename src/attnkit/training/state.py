"""The counters a run goes on from, the same for every family: :class:`TrainerState`.

Each family writes them into its checkpoints' ``trainer.json`` under the names its checkpoints
have always used (a :data:`Layout`): a seq2seq run under ``state`` (:data:`SEQ2SEQ`), a vision
run at the top level, where the best dev error is ``best_dev_error`` and the evaluations without
improvement ``bad_epochs`` (:data:`VISION`). :func:`state_to_json` writes a layout and
:func:`state_from_json` reads one back, every value checked by type, so the checkpoints written
before one state served both families load as they did.
"""

from __future__ import annotations

import typing
from dataclasses import dataclass, field
from typing import Any

from attnkit.errors import CheckpointError
from attnkit.training.resume import has_type, short, type_name

#: a family's names in ``trainer.json`` -> the :class:`TrainerState` field each holds, in the
#: order the file lists them
Layout = dict[str, str]


@dataclass
class TrainerState:
    """Where a run stands: enough to resume it exactly and to report on it."""

    epoch: int = 0  # epochs completed (the current epoch, 0-based)
    batches_done: int = 0  # batches of the current epoch already trained
    step: int = 0  # updates tried (skipped ones included)
    best: float | None = None  # the best dev score so far (None: none scored yet)
    best_step: int = 0  # the update of the best dev score
    best_epoch: int = 0  # the epochs completed at the best dev score
    bad_evals: int = 0  # dev evaluations since the last improvement
    elapsed_s: float = 0.0  # training wall time, summed over resumed runs
    planned_epochs: int = 0  # the epochs the run plans (cut to what a time budget can finish)
    tokens: int = 0  # target tokens trained on, EOS included (seq2seq)
    train_s: float = 0.0  # seconds spent in updates: evaluation and checkpointing left out
    finished: bool = False  # the run reached its end (not stopped by a signal)
    stopped: str = ""  # why training ended: "", "epochs", "patience", "budget"
    skipped_updates: int = 0  # updates with a NaN/inf loss or gradient norm: none applied
    history: list = field(default_factory=list)  # one entry per dev evaluation

    def epoch_number(self) -> int:
        """The 1-based epoch the run is in: the one in progress (some of its batches done), or,
        once an epoch is counted (none of the next done yet), the one just counted."""
        return self.epoch if self.batches_done == 0 and self.epoch > 0 else self.epoch + 1

    def count_evaluation(self, value: float, higher_is_better: bool) -> bool:
        """Count a dev evaluation whose score is ``value`` into best / bad_evals; True when it
        is the best so far (strictly better than the best before)."""
        improved = self.best is None or (
            value > self.best if higher_is_better else value < self.best
        )
        if improved:
            self.best, self.best_step, self.best_epoch = value, self.step, self.epoch
            self.bad_evals = 0
        else:
            self.bad_evals += 1
        return improved


def _same_names(*names: str) -> Layout:
    return {name: name for name in names}


#: ``trainer.json``'s ``state`` of a seq2seq checkpoint
SEQ2SEQ: Layout = _same_names(
    "epoch",
    "batches_done",
    "step",
    "best",
    "best_step",
    "bad_evals",
    "elapsed_s",
    "tokens",
    "train_s",
    "finished",
    "skipped_updates",
    "history",
)
#: the counters of a vision checkpoint's ``trainer.json`` (beside its ``optimizer``)
VISION: Layout = {
    **_same_names("epoch", "batches_done", "step", "planned_epochs"),
    "best_dev_error": "best",
    "best_epoch": "best_epoch",
    "bad_epochs": "bad_evals",
    **_same_names("elapsed_s", "stopped", "skipped_updates", "history"),
}
#: the counters of a text-classification checkpoint's ``trainer.json`` (beside its ``optimizer``)
TEXT: Layout = {
    **_same_names("epoch", "batches_done", "step", "planned_epochs"),
    "best_dev_accuracy": "best",
    "best_epoch": "best_epoch",
    "bad_epochs": "bad_evals",
    **_same_names("elapsed_s", "stopped", "skipped_updates", "history"),
}


def state_to_json(state: TrainerState, layout: Layout) -> dict:
    """The fields of ``layout`` under its names, in its order (a new dict; history shared)."""
    return {name: getattr(state, attribute) for name, attribute in layout.items()}


def state_from_json(data: Any, layout: Layout, where: str) -> TrainerState:
    """A :class:`TrainerState` from a JSON object written with ``layout``.

    Names the object lacks keep their defaults (a checkpoint written before a counter existed);
    a name outside ``layout`` or a value of the wrong type is a CheckpointError naming ``where``
    and the key. ``null`` is a valid best score (none scored yet).
    """
    if not isinstance(data, dict):
        raise CheckpointError(f"{where}: expected a JSON object, got {type(data).__name__}")
    hints = typing.get_type_hints(TrainerState)
    values = {}
    for key, value in data.items():
        if key not in layout:
            raise CheckpointError(f"{where}: unknown key {key!r}; valid keys: {', '.join(layout)}")
        hint = hints[layout[key]]
        if not has_type(value, hint):
            raise CheckpointError(f"{where}.{key}: {short(value)} is not a valid {type_name(hint)}")
        values[layout[key]] = value
    if "history" in values:
        values["history"] = upgrade_history(values["history"])
    return TrainerState(**values)


def upgrade_history(history: list) -> list:
    """A history written before every family kept one shape, in today's: the dev figures of an
    entry under ``dev`` (``{"dev_error_pct": 2.1}`` -> ``{"dev": {"error_pct": 2.1}}``). The
    one place an old checkpoint's history is read into today's shape; entries already in it
    are kept as they are."""
    upgraded = []
    for entry in history:
        if isinstance(entry, dict) and "dev" not in entry:
            dev = {k.removeprefix("dev_"): v for k, v in entry.items() if k.startswith("dev_")}
            if dev:
                entry = {k: v for k, v in entry.items() if not k.startswith("dev_")} | {"dev": dev}
        upgraded.append(entry)
    return upgraded


#: the counters of a graph checkpoint's ``trainer.json`` (beside its ``optimizer``)
GRAPH: Layout = {
    **_same_names("epoch", "batches_done", "step", "planned_epochs"),
    "best_dev_score": "best",
    "best_epoch": "best_epoch",
    "bad_epochs": "bad_evals",
    **_same_names("elapsed_s", "stopped", "skipped_updates", "history"),
}
