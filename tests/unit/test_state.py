"""The one trainer state of every family, and the names each family's trainer.json uses."""

from __future__ import annotations

import json

import pytest

from attnkit.errors import CheckpointError
from attnkit.training.state import (
    SEQ2SEQ,
    VISION,
    TrainerState,
    state_from_json,
    state_to_json,
)

#: the counters a vision checkpoint's trainer.json held before one state served both families
OLD_VISION = {
    "epoch": 3,
    "batches_done": 0,
    "step": 42,
    "planned_epochs": 5,
    "best_dev_error": 12.5,
    "best_epoch": 2,
    "bad_epochs": 1,
    "elapsed_s": 9.25,
    "stopped": "",
    "skipped_updates": 1,
    "history": [{"epoch": 1, "dev_error_pct": 20.0}],
}
OLD_SEQ2SEQ = {
    "epoch": 1,
    "batches_done": 4,
    "step": 17,
    "best": 0.75,
    "best_step": 10,
    "bad_evals": 2,
    "elapsed_s": 3.5,
    "tokens": 900,
    "train_s": 2.0,
    "finished": False,
    "skipped_updates": 0,
    "history": [{"step": 10, "dev": {"acc": 0.75}}],
}


def test_old_vision_counters_are_read_into_the_shared_fields():
    state = state_from_json(json.loads(json.dumps(OLD_VISION)), VISION, "t.json")
    assert (state.best, state.bad_evals, state.best_epoch) == (12.5, 1, 2)
    assert (state.epoch, state.step, state.planned_epochs, state.elapsed_s) == (3, 42, 5, 9.25)
    # an old history reads in today's shape: its dev figures under "dev"
    assert state.history == [{"epoch": 1, "dev": {"error_pct": 20.0}}]


@pytest.mark.parametrize("layout, saved", [(VISION, OLD_VISION), (SEQ2SEQ, OLD_SEQ2SEQ)])
def test_each_family_writes_back_the_same_names_in_the_same_order(layout, saved):
    written = state_to_json(state_from_json(saved, layout, "t.json"), layout)
    assert list(written) == list(saved)
    # the same values, the history in today's shape (an old one's dev figures under "dev")
    assert {**written, "history": None} == {**saved, "history": None}
    assert [entry["dev"] for entry in written["history"]] in (
        [{"error_pct": 20.0}],
        [{"acc": 0.75}],
    )


def test_a_vision_run_before_its_first_score_writes_null_and_reads_it_back():
    written = state_to_json(TrainerState(planned_epochs=4), VISION)
    assert written["best_dev_error"] is None
    assert state_from_json(written, VISION, "t.json").best is None


def test_an_old_file_without_a_counter_keeps_its_default():
    state = state_from_json({"epoch": 2}, VISION, "t.json")
    assert (state.epoch, state.best, state.stopped, state.history) == (2, None, "", [])


def test_a_name_of_the_other_family_is_refused_with_the_valid_ones():
    with pytest.raises(CheckpointError, match=r"t.json: unknown key 'best'; valid keys: epoch, "):
        state_from_json({"best": 1.0}, VISION, "t.json")
    with pytest.raises(CheckpointError, match=r"unknown key 'bad_epochs'; valid keys: epoch"):
        state_from_json({"bad_epochs": 1}, SEQ2SEQ, "t.json")


@pytest.mark.parametrize(
    "key, value", [("bad_epochs", 1.5), ("best_dev_error", "low"), ("step", True), ("history", {})]
)
def test_a_value_of_the_wrong_type_names_the_key(key, value):
    with pytest.raises(CheckpointError, match=rf"t.json\.{key}: .* is not a valid"):
        state_from_json({key: value}, VISION, "t.json")
    with pytest.raises(CheckpointError, match="expected a JSON object, got list"):
        state_from_json([], VISION, "t.json")


def test_count_evaluation_keeps_the_best_in_either_direction():
    lower = TrainerState(step=5, epoch=1)
    assert lower.count_evaluation(10.0, higher_is_better=False)
    lower.step, lower.epoch = 9, 2
    assert not lower.count_evaluation(10.0, higher_is_better=False)  # equal is no improvement
    assert (lower.best, lower.best_step, lower.best_epoch, lower.bad_evals) == (10.0, 5, 1, 1)
    higher = TrainerState(step=3)
    higher.count_evaluation(0.5, higher_is_better=True)
    higher.step = 4
    assert higher.count_evaluation(0.6, higher_is_better=True)
    assert (higher.best, higher.best_step, higher.bad_evals) == (0.6, 4, 0)
