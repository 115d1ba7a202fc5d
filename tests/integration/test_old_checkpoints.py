"""Checkpoints written by an earlier attnkit (commit 5afbdd1, before the Python API, the
checkpoint package and the one multi-head attention) load unchanged through ``attnkit.load`` and
give the outputs, log-probabilities and attention that attnkit computed for them then; an old
run's ``last/`` resumes.

``tests/data/checkpoints_5afbdd1/`` holds tiny models trained (seq2seq) or initialised (vision)
by that commit, and ``expected.json`` what it decoded: greedy outputs of three inputs and the
attention of each forced along a reference, and the vision models' class probabilities on
``digit.npy``.

``tests/data/runs_3df3873/`` holds tiny runs (best/ and last/) of the pointer and graph families
trained by commit 3df3873, the last to write their counters at the top of ``trainer.json``
under their own names (``best_dev_error``, ``best_dev_score``, ``bad_epochs``) and their
history's dev figures as ``dev_<name>``: they evaluate and resume through the one upgrade on
read, and the resumed run writes today's layout.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

import attnkit

OLD = Path(__file__).resolve().parents[1] / "data" / "checkpoints_5afbdd1"
BEFORE_ONE_LAYOUT = Path(__file__).resolve().parents[1] / "data" / "runs_3df3873"
EXPECTED = json.loads((OLD / "expected.json").read_text(encoding="utf-8"))
SEQ2SEQ = ["rnn-bahdanau", "rnn-multihead", "transformer"]


@pytest.mark.parametrize("name", SEQ2SEQ)
def test_an_old_seq2seq_checkpoint_decodes_as_it_did(name):
    want = EXPECTED[name]
    model = attnkit.load(OLD / want["checkpoint"], "cpu")
    got = model.translate(EXPECTED["texts"])
    assert [t.output for t in got] == want["outputs"]
    assert [t.score for t in got] == pytest.approx(want["scores"], abs=1e-4)
    for t, weights in zip(got, want["weights"]):
        np.testing.assert_allclose(t.weights, np.asarray(weights), atol=1e-5)
    forced = model.translator.teacher_forced(EXPECTED["texts"], EXPECTED["references"])
    assert [f.score for f in forced] == pytest.approx(want["forced_scores"], abs=1e-4)
    for f, weights in zip(forced, want["forced_weights"]):
        np.testing.assert_allclose(f.weights, np.asarray(weights), atol=1e-5)


@pytest.mark.parametrize("name", ["vision-attention_pooling", "vision-ram"])
def test_an_old_vision_checkpoint_answers_as_it_did(name):
    model = attnkit.load(OLD / EXPECTED[name]["checkpoint"], "cpu")
    answer = model.classify(np.load(OLD / "digit.npy"))
    assert answer.probs == pytest.approx(EXPECTED[name]["probs"], abs=1e-5)


def test_an_old_run_resumes(tmp_path):
    run = tmp_path / "run"
    shutil.copytree(OLD / "rnn-bahdanau", run)
    before = json.loads((run / "last" / "trainer.json").read_text())["state"]["step"]
    resumed = attnkit.train(
        run / "last" / "config.yaml",
        overrides={"train.epochs": 4},
        output_dir=run,
        resume=True,
    )
    after = json.loads((resumed.last / "trainer.json").read_text())["state"]
    assert after["epoch"] == 4 and after["step"] > before
    assert attnkit.load(resumed.best).translate("vier")[0].weights.shape[1] == 5  # v i e r </s>


@pytest.mark.parametrize("name", ["pointer", "graph"])
def test_a_run_written_before_the_one_trainer_layout_evaluates_and_resumes(tmp_path, name):
    run = tmp_path / name
    shutil.copytree(BEFORE_ONE_LAYOUT / name, run)
    old = json.loads((run / "last" / "trainer.json").read_text())
    assert "state" not in old and old["epoch"] >= 2  # the old flat layout
    before = attnkit.load(run / "best").evaluate("test")
    assert before.table()
    resumed = attnkit.train(
        run / "last" / "config.yaml",
        overrides={"train.epochs": old["epoch"] + 1},
        output_dir=run,
        resume=True,
    )
    state = json.loads((resumed.last / "trainer.json").read_text())["state"]  # today's layout
    assert state["epoch"] == old["epoch"] + 1 and state["step"] > old["step"]
    assert state["elapsed_s"] > old["elapsed_s"]  # the clock goes on from the old counters
    assert len(state["history"]) == len(old["history"]) + 1
    first = old["history"][0]  # pointer's held "dev" already, graph's "dev_<name>" figures
    old_dev = first.get("dev") or {k[4:]: v for k, v in first.items() if k.startswith("dev_")}
    assert old_dev and state["history"][0]["dev"] == old_dev  # the old entries, upgraded
    assert attnkit.load(resumed.best).evaluate("test").table()
