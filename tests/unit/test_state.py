"""The one trainer state of every family, the one layout of trainer.json, and the upgrade on
read of the layouts written before it."""

from __future__ import annotations

import dataclasses
import json

import pytest

from attnkit.errors import CheckpointError
from attnkit.training.state import TrainerState, from_trainer, read_state, to_trainer

#: the counters a vision checkpoint's trainer.json held at its top level, before one layout
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
    state, sections = from_trainer({**OLD_VISION, "optimizer": {"x": 1}}, "t.json", ("optimizer",))
    assert (state.best, state.bad_evals, state.best_epoch) == (12.5, 1, 2)
    assert (state.epoch, state.step, state.planned_epochs, state.elapsed_s) == (3, 42, 5, 9.25)
    assert sections == {"optimizer": {"x": 1}}
    # an old history reads in today's shape: its dev figures under "dev"
    assert state.history == [{"epoch": 1, "dev": {"error_pct": 20.0}}]


@pytest.mark.parametrize("name", ["best_dev_error", "best_dev_accuracy", "best_dev_score"])
def test_each_old_name_of_the_best_score_reads_into_best(name):
    state, _ = from_trainer({"epoch": 2, name: 0.5, "bad_epochs": 3}, "t.json")
    assert (state.epoch, state.best, state.bad_evals) == (2, 0.5, 3)


def test_an_old_seq2seq_state_keeps_the_defaults_of_the_fields_it_lacks():
    old = {"state": OLD_SEQ2SEQ, "metric": "acc", "backend": {}}
    state, sections = from_trainer(old, "t.json", (), ("metric", "backend"))
    assert (state.step, state.best, state.tokens, state.history) == (
        17,
        0.75,
        900,
        OLD_SEQ2SEQ["history"],
    )
    assert (state.planned_epochs, state.best_epoch, state.stopped) == (0, 0, "")
    assert sections == {"metric": "acc", "backend": {}}


def test_every_family_writes_one_layout_that_reads_back_the_same():
    state = TrainerState(epoch=3, step=42, best=0.5, best_epoch=2, history=[{"step": 1, "dev": {}}])
    written = to_trainer(state, optimizer={"param_groups": []})
    assert list(written) == ["state", "optimizer"]
    assert list(written["state"]) == [f.name for f in dataclasses.fields(TrainerState)]
    again, sections = from_trainer(json.loads(json.dumps(written)), "t.json", ("optimizer",))
    assert again == state and sections == {"optimizer": {"param_groups": []}}


def test_a_run_before_its_first_score_writes_null_and_reads_it_back():
    written = to_trainer(TrainerState(planned_epochs=4))
    assert written["state"]["best"] is None
    assert from_trainer(written, "t.json")[0].best is None


def test_an_old_file_without_a_counter_keeps_its_default():
    state, _ = from_trainer({"epoch": 2}, "t.json")
    assert (state.epoch, state.best, state.stopped, state.history) == (2, None, "", [])


def test_unknown_counters_and_sections_are_refused_with_the_valid_ones():
    with pytest.raises(
        CheckpointError, match=r"t.json: state: unknown key 'bogus'; valid keys: epoch, "
    ):
        from_trainer({"state": {"bogus": 1}}, "t.json")
    with pytest.raises(
        CheckpointError, match=r"t.json: unknown key 'extra'; valid keys: state, optimizer"
    ):
        from_trainer({"state": {}, "optimizer": {}, "extra": 1}, "t.json", ("optimizer",))
    with pytest.raises(CheckpointError, match=r"t.json: 'optimizer' is missing"):
        from_trainer({"state": {}}, "t.json", ("optimizer",))
    with pytest.raises(CheckpointError, match=r"t.json: 'optimizer' is missing"):
        from_trainer({"epoch": 1}, "t.json", ("optimizer",))  # the old flat layout too


@pytest.mark.parametrize(
    "key, value", [("bad_epochs", 1.5), ("best_dev_error", "low"), ("step", True), ("history", {})]
)
def test_a_value_of_the_wrong_type_names_the_key(key, value):
    with pytest.raises(CheckpointError, match=rf"t.json\.{key}: .* is not a valid"):
        from_trainer({key: value}, "t.json")
    with pytest.raises(CheckpointError, match=rf"t.json: state\.{key}: .* is not a valid"):
        from_trainer({"state": {key: value}}, "t.json")
    with pytest.raises(CheckpointError, match="expected a JSON object, got list"):
        from_trainer([], "t.json")


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


def test_read_state_reads_a_checkpoint_of_either_layout(tmp_path):
    (tmp_path / "new").mkdir()
    written = to_trainer(TrainerState(step=7, best=0.5), metric="bleu", optimizer={})
    (tmp_path / "new" / "trainer.json").write_text(json.dumps(written), encoding="utf-8")
    assert (read_state(tmp_path / "new").step, read_state(tmp_path / "new").best) == (7, 0.5)
    (tmp_path / "old").mkdir()
    (tmp_path / "old" / "trainer.json").write_text(json.dumps(OLD_VISION), encoding="utf-8")
    assert read_state(tmp_path / "old").best == 12.5
    (tmp_path / "bad").mkdir()
    (tmp_path / "bad" / "trainer.json").write_text("{", encoding="utf-8")
    with pytest.raises(CheckpointError, match=r"bad/trainer.json: cannot read"):
        read_state(tmp_path / "bad")


def test_the_epoch_of_a_state_counts_from_one():
    assert TrainerState(epoch=0, batches_done=0).epoch_number() == 1  # nothing done yet
    assert TrainerState(epoch=0, batches_done=3).epoch_number() == 1  # epoch 1 in progress
    assert TrainerState(epoch=1, batches_done=0).epoch_number() == 1  # epoch 1 just counted
    assert TrainerState(epoch=1, batches_done=2).epoch_number() == 2
