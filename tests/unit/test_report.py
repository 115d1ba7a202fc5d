"""The one line every family logs after a dev evaluation, and how an evaluation is counted."""

from __future__ import annotations

from pathlib import Path

from attnkit.training.report import DevScore, evaluation_line, figure, final_line
from attnkit.training.state import TrainerState


def test_figures_read_as_people_write_them():
    assert figure("error_pct", 1.5) == "error 1.50%"
    assert figure("bleu", 23.4567) == "bleu 23.46"
    assert figure("loss", 0.000123456) == "loss 0.0001235"
    assert figure("nodes", 1000) == "nodes 1,000"


def test_the_evaluation_line_says_where_dev_train_rate_and_time():
    state = TrainerState(step=1200, epoch=2, planned_epochs=10)
    score = DevScore({"bleu": 23.4567, "chrf": 51.0, "items": 500}, "bleu", True)
    train = {"loss": 1.23456, "accuracy": 0.612, "tokens_per_s": 2131.4}
    line = evaluation_line(state, 3, score, True, train, 1e-3, 41.25, 2, "tokens")
    assert line == (
        "update 1200 (epoch 3/10): dev bleu 23.46 (best), chrf 51; "
        "train loss 1.2346, accuracy 61.2%; lr 1.0e-03; 41.2 s, 2,131 tokens/s; "
        "2 updates skipped (not finite)"
    )
    # no update applied since the last evaluation: no training figures to show
    quiet = evaluation_line(state, 3, score, False, {}, 1e-3, 0.5, 0, "tokens")
    assert quiet == "update 1200 (epoch 3/10): dev bleu 23.46, chrf 51; lr 1.0e-03; 0.5 s"


def test_a_score_is_counted_by_its_metric_in_either_direction():
    state = TrainerState(step=10)
    lower = DevScore({"error_pct": 5.0}, "error_pct", higher_is_better=False)
    assert lower.count(state, 1) and (state.best, state.best_step, state.best_epoch) == (5.0, 10, 1)
    state.step = 20
    worse = DevScore({"error_pct": 6.0}, "error_pct", higher_is_better=False)
    assert not worse.count(state, 2) and (state.best, state.bad_evals) == (5.0, 1)


def test_a_family_rule_decides_best_and_patience_apart():
    """The GAT paper's rule: patience is reset by either figure improving, best needs both."""
    state = TrainerState(step=1, bad_evals=3)
    either = DevScore({"accuracy": 0.5}, "accuracy", True, best=False, progress=True)
    assert not either.count(state, 1) and state.bad_evals == 0 and state.best is None
    neither = DevScore({"accuracy": 0.4}, "accuracy", True, best=False, progress=False)
    assert not neither.count(state, 2) and state.bad_evals == 1
    state.step = 3
    both = DevScore({"accuracy": 0.45}, "accuracy", True, best=True)
    assert both.count(state, 3) and (state.best, state.best_step, state.bad_evals) == (0.45, 3, 0)


def test_the_last_line_names_why_the_best_and_where():
    state = TrainerState(step=2000, best=23.4567, best_step=1200, best_epoch=3, elapsed_s=246)
    state.stopped = "patience"
    assert final_line(state, "bleu", Path("runs/x")) == (
        "done (patience): best dev bleu 23.46 at update 1200 (epoch 3); 2,000 updates in 4.1 "
        "min; checkpoints in runs/x"
    )
    assert final_line(TrainerState(), None, Path("r")).startswith(
        "done (epochs): no dev evaluation;"
    )
