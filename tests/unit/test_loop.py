"""The training loop with a family of its own: a one-weight model whose adapter records what the
loop asks of it (evaluations, checkpoints, skipped updates, interruptions)."""

from __future__ import annotations

import math
import signal
from pathlib import Path

import pytest
import torch

from attnkit.errors import TrainingError, TrainingInterrupted
from attnkit.training import rundir
from attnkit.training import tensorboard as tb
from attnkit.training.loop import LoopSettings, TrainingLoop, Update
from attnkit.training.report import DevScore
from attnkit.training.state import TrainerState


class ToyAdapter:
    """Batches of numbers x; the loss of an update is (w * x - 1)^2, NaN where x is NaN. Each dev
    evaluation scores the next of ``dev_scores`` (lower is better)."""

    items = "items"

    def __init__(self, batches_per_epoch: int, dev_scores: list[float]):
        self.weight = torch.nn.Parameter(torch.zeros(()))
        self.optimizer = torch.optim.SGD([self.weight], lr=0.1)
        self.batches = [1.0] * batches_per_epoch
        self.dev_scores = list(dev_scores)
        self.events: list[tuple] = []
        self.on_update = lambda update: None  # a test's hook: raise a signal at some update

    def parameters(self):
        return [self.weight]

    def epoch_batches(self, state):
        self.events.append(("begin", state.epoch, state.batches_done))
        return list(self.batches)

    def rate(self, state, index, n_batches, elapsed):
        return 0.1

    def step(self, batch, update):
        self.on_update(update)
        self.optimizer.zero_grad()
        loss = (self.weight * batch - 1) ** 2
        loss.backward()
        return Update(loss.detach(), float(loss.detach()), 1, 1)

    def evaluate(self, state):
        value = self.dev_scores.pop(0)
        self.events.append(("score", state.epoch, state.step, value))
        return DevScore({"loss": value}, "loss", higher_is_better=False)

    def save(self, name, state, resumable):
        self.events.append(("save", name, resumable, state.step, state.epoch, state.batches_done))

    def saved(self, state, reason):
        if reason:
            self.events.append(("stopped", reason))


def run(adapter, state=None, lines=None, **settings):
    state = state or TrainerState(planned_epochs=settings.pop("planned", 2))
    settings = LoopSettings(**{"epochs": state.planned_epochs, **settings})
    log = (lines if lines is not None else []).append
    board = tb.Board(Path("run") / "tensorboard", False, log, "items")  # off: no files
    with rundir.StopSignals() as signals:
        adapter.signals = signals
        TrainingLoop(adapter, settings, Path("run"), signals, board, log).run(state)
    return state


def test_one_evaluation_an_epoch_is_scored_on_the_epochs_done():
    adapter = ToyAdapter(3, [0.5, 0.6])
    state = run(adapter)
    assert (state.step, state.epoch, state.batches_done, state.best, state.best_step) == (
        6,
        2,
        0,
        0.5,
        3,
    )
    scores = [e for e in adapter.events if e[0] == "score"]
    assert scores == [("score", 1, 3, 0.5), ("score", 2, 6, 0.6)]  # the epoch counted first
    # an improvement: best (for decoding) then last (resumable); no improvement: last alone
    assert [e for e in adapter.events if e[0] == "save"] == [
        ("save", "best", False, 3, 1, 0),
        ("save", "last", True, 3, 1, 0),
        ("save", "last", True, 6, 2, 0),
    ]
    assert (state.best_epoch, state.bad_evals, state.stopped) == (1, 1, "epochs")
    assert float(adapter.weight.detach()) != 0.0  # the updates were applied


def test_an_evaluation_due_at_an_epoch_s_last_update_is_its_one_evaluation():
    adapter = ToyAdapter(2, [0.5, 0.4])
    state = run(adapter, eval_every=2)  # due after updates 2 and 4: each an epoch's last
    assert [e for e in adapter.events if e[0] == "score"] == [
        ("score", 1, 2, 0.5),
        ("score", 2, 4, 0.4),
    ]
    assert (state.epoch, state.stopped) == (2, "epochs")


def test_an_old_checkpoint_written_at_an_epoch_s_end_before_it_was_counted_goes_on():
    adapter = ToyAdapter(3, [0.4])
    state = run(adapter, TrainerState(epoch=0, batches_done=3, step=3, planned_epochs=2))
    assert adapter.events[:2] == [("begin", 0, 3), ("begin", 1, 0)]  # counted, not evaluated
    assert [e for e in adapter.events if e[0] == "score"] == [("score", 2, 6, 0.4)]
    assert (state.step, state.epoch) == (6, 2)


def test_a_run_whose_eval_every_is_never_reached_is_evaluated_at_its_end():
    """Every run that ends by its planned epochs has a best, however far apart evaluations are."""
    adapter = ToyAdapter(3, [0.5, 0.4])
    state = run(adapter, planned=2, eval_every=100)
    assert [e for e in adapter.events if e[0] == "score"] == [("score", 2, 6, 0.5)]
    assert ("save", "best", False, 6, 2, 0) in adapter.events
    assert (state.best_step, state.stopped) == (6, "epochs")


def test_eval_every_evaluates_between_updates_and_patience_ends_the_run():
    adapter = ToyAdapter(4, [0.5, 0.6, 0.7, 0.1])
    state = run(adapter, planned=5, eval_every=2, patience=2)
    assert [e[2] for e in adapter.events if e[0] == "score"] == [2, 4, 6]  # none more at 4
    assert ("stopped", "patience") in adapter.events
    assert (state.step, state.epoch, state.batches_done, state.bad_evals) == (6, 1, 2, 2)


def test_a_non_finite_update_is_skipped_counted_and_logged_and_too_many_end_the_run():
    adapter = ToyAdapter(3, [1.0, 1.0])
    adapter.batches = [1.0, math.nan, 1.0]
    lines = []
    state = run(adapter, lines=lines, planned=1)
    assert state.skipped_updates == 1 and state.step == 3
    assert any(line.startswith("update 2: skipped, not finite (loss nan") for line in lines)
    adapter = ToyAdapter(3, [1.0])
    adapter.batches = [math.nan] * 3
    with pytest.raises(TrainingError, match="update 2: 2 updates in a row"):
        run(adapter, planned=1, max_bad_updates=2)


def test_a_signal_saves_last_after_the_current_update_and_a_resumed_run_goes_on_from_it():
    adapter = ToyAdapter(3, [0.5, 0.4])

    def signal_at(update):
        if update == 5:
            adapter.signals._handle(signal.SIGTERM, None)

    adapter.on_update = signal_at
    with pytest.raises(TrainingInterrupted) as stopped:
        state = TrainerState(planned_epochs=2)
        run(adapter, state)
    assert stopped.value.exit_status == 128 + signal.SIGTERM
    assert "update 5" in str(stopped.value)
    assert adapter.events[-1] == ("save", "last", True, 5, 1, 2)
    resumed = ToyAdapter(3, [0.4])
    state = run(resumed, state)  # the same counters: as read back from last
    assert resumed.events[0] == ("begin", 1, 2)  # the rest of the interrupted epoch
    assert (state.step, state.epoch) == (6, 2)


def test_a_spent_budget_evaluates_at_once_and_ends_the_run_mid_epoch():
    adapter = ToyAdapter(3, [0.5, 0.4])
    state = TrainerState(planned_epochs=3, elapsed_s=100.0)  # resumed past a 1-minute budget
    state = run(adapter, state, budget_s=60.0)
    assert ("stopped", "budget") in adapter.events
    # the epoch is not done: last/ goes on from its second batch
    assert (state.step, state.epoch, state.batches_done, state.stopped) == (1, 0, 1, "budget")
    assert adapter.events[-2] == ("save", "last", True, 1, 0, 1)
    resumed = ToyAdapter(3, [0.4, 0.3, 0.2])
    state.elapsed_s, state.stopped = 0.0, ""  # a resumed run with a larger budget
    run(resumed, state, budget_s=600.0)
    assert resumed.events[0] == ("begin", 0, 1)


def test_the_settings_of_each_family_s_train_section():
    from attnkit.families.seq2seq.config import TrainConfig as Seq2SeqTrain
    from attnkit.families.vision.config import TrainConfig as VisionTrain

    seq2seq = LoopSettings.of(Seq2SeqTrain(eval_every=7, max_minutes=2.0, clip=None))
    assert (seq2seq.eval_every, seq2seq.budget_s, seq2seq.patience, seq2seq.clip) == (
        7,
        120.0,
        5,
        None,
    )
    vision = LoopSettings.of(VisionTrain(patience=None))  # vision evaluates once an epoch
    assert (vision.epochs, vision.eval_every, vision.budget_s, vision.patience) == (
        50,
        0,
        None,
        None,
    )
