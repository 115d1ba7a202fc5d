"""The counters a run goes on from, the same for every family: :class:`TrainerState`, and the
one layout of a checkpoint's ``trainer.json`` that holds them.

Every family writes ``{"state": {field: value, ...}, <its other sections>}`` (:func:`to_trainer`):
every field of :class:`TrainerState` under its own name, beside the sections a family keeps
(``optimizer`` in ``last/``; seq2seq's ``metric``, ``backend``, ``scheduler``).
:func:`from_trainer` reads it back, every value checked by type, and is the one place where a
checkpoint written before this layout is upgraded on read: seq2seq's ``state`` held fewer
fields (the rest keep their defaults); vision, text, graph, memory and pointer networks wrote
their counters at the top level, the best dev score as ``best_dev_error``,
``best_dev_accuracy`` or ``best_dev_score`` and the evaluations without improvement as
``bad_epochs`` (:data:`OLD_NAMES`); and the history's dev figures were ``dev_<name>`` keys
(:func:`upgrade_history`).
"""

from __future__ import annotations

import json
import typing
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

from attnkit.errors import CheckpointError
from attnkit.training.resume import has_type, short, type_name


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


#: the name of the counters' section in ``trainer.json``
SECTION = "state"
#: every field of :class:`TrainerState`, as ``trainer.json`` names them
FIELDS: tuple[str, ...] = tuple(f.name for f in fields(TrainerState))
#: the names checkpoints written before one layout gave a field (at the top of trainer.json)
OLD_NAMES = {
    "best_dev_error": "best",  # vision, memory and pointer networks
    "best_dev_accuracy": "best",  # text classification
    "best_dev_score": "best",  # graph attention
    "bad_epochs": "bad_evals",
}


def to_trainer(state: TrainerState, **sections: Any) -> dict:
    """A checkpoint's ``trainer.json``: the counters under ``state``, then ``sections`` (the
    optimizer, a family's own); the history is shared, not copied."""
    return {SECTION: {name: getattr(state, name) for name in FIELDS}, **sections}


def from_trainer(
    data: Any, where: str, required: tuple[str, ...] = (), optional: tuple[str, ...] = ()
) -> tuple[TrainerState, dict]:
    """(counters, the other sections) of a ``trainer.json`` object, whichever layout wrote it:
    today's, or an older one upgraded on read (the module's docstring). A section outside
    ``required`` + ``optional``, a missing required one, an unknown counter or a value of the
    wrong type is a CheckpointError naming ``where`` and the key."""
    if not isinstance(data, dict):
        raise CheckpointError(f"{where}: expected a JSON object, got {type(data).__name__}")
    if SECTION in data:
        counters, sections = data[SECTION], {k: v for k, v in data.items() if k != SECTION}
        at = f"{where}: {SECTION}"
    else:  # the older flat layout: every key but the sections is a counter
        sections = {k: v for k, v in data.items() if k in required + optional}
        counters, at = {k: v for k, v in data.items() if k not in sections}, where
    for key in required:
        if key not in sections:
            raise CheckpointError(f"{where}: {key!r} is missing")
    unknown = sorted(set(sections) - set(required) - set(optional))
    if unknown:
        valid = ", ".join((SECTION, *required, *optional))
        raise CheckpointError(f"{where}: unknown key {unknown[0]!r}; valid keys: {valid}")
    return _counters(counters, at), sections


def read_state(directory: str | Path) -> TrainerState:
    """The counters of the checkpoint in ``directory`` (its ``trainer.json``), whichever layout
    wrote it: for reports and benchmarks, which read no optimizer."""
    path = Path(directory) / "trainer.json"
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise CheckpointError(f"{path}: cannot read ({exc})") from None
    counter_names = {*FIELDS, *OLD_NAMES}
    sections = tuple(k for k in data if k not in counter_names) if isinstance(data, dict) else ()
    return from_trainer(data, str(path), optional=sections)[0]


def _counters(data: Any, where: str) -> TrainerState:
    """A :class:`TrainerState` from its JSON object (today's names or :data:`OLD_NAMES`);
    names the object lacks keep their defaults (a checkpoint written before a counter
    existed); ``null`` is a valid best score (none scored yet)."""
    if not isinstance(data, dict):
        raise CheckpointError(f"{where}: expected a JSON object, got {type(data).__name__}")
    hints = typing.get_type_hints(TrainerState)
    values = {}
    for key, value in data.items():
        name = OLD_NAMES.get(key, key)
        if name not in FIELDS:
            raise CheckpointError(f"{where}: unknown key {key!r}; valid keys: {', '.join(FIELDS)}")
        if not has_type(value, hints[name]):
            raise CheckpointError(
                f"{where}.{key}: {short(value)} is not a valid {type_name(hints[name])}"
            )
        values[name] = value
    if "history" in values:
        values["history"] = upgrade_history(values["history"])
    return TrainerState(**values)


def upgrade_history(history: list) -> list:
    """A history written before every family kept one shape, in today's: the dev figures of an
    entry under ``dev`` (``{"dev_error_pct": 2.1}`` -> ``{"dev": {"error_pct": 2.1}}``); entries
    already in it are kept as they are."""
    upgraded = []
    for entry in history:
        if isinstance(entry, dict) and "dev" not in entry:
            dev = {k.removeprefix("dev_"): v for k, v in entry.items() if k.startswith("dev_")}
            if dev:
                entry = {k: v for k, v in entry.items() if not k.startswith("dev_")} | {"dev": dev}
        upgraded.append(entry)
    return upgraded
