"""The one driver of a training run (``attnkit.training.run``), driven with the toy family's
adapter (``toyfamily/`` beside this file): what it refuses, what it sets up, what it writes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from attnkit.errors import ConfigError
from attnkit.training.run import Plan, Started, TrainSettings, run
from attnkit.training.state import TrainerState


@pytest.fixture(autouse=True)
def _toy_importable(monkeypatch):
    monkeypatch.syspath_prepend(str(Path(__file__).parent))


def _start(out: Path, seen: list, lr: float = 5.0):
    from toyfamily.train import ToyAdapter

    def start(context):
        seen.append((context.device, torch.get_num_threads(), torch.initial_seed()))
        context.log("set up")
        return Started(ToyAdapter(out, {"family": "toy"}, lr), TrainerState(planned_epochs=2))

    return start


def test_a_run_sets_torch_up_trains_and_keeps_its_lines_and_metrics(tmp_path, capsys):
    before = torch.get_num_threads()
    seen: list = []
    settings = TrainSettings(epochs=2, seed=7, device="cpu", threads=1)
    try:
        best = run(Plan(tmp_path / "run", settings, "lists"), _start(tmp_path / "run", seen))
    finally:
        torch.set_num_threads(before)
    assert best == tmp_path / "run" / "best" and (best / "meta.json").is_file()
    assert seen == [(torch.device("cpu"), 1, 7)]
    err = capsys.readouterr().err.splitlines()
    assert err[0] == "set up" and err[1].startswith("update 8 (epoch 1/2): dev mean_abs_error ")
    assert err[-1].startswith("done (epochs): best dev mean_abs_error ")
    logged = (tmp_path / "run" / "train.log").read_text(encoding="utf-8").splitlines()
    assert [line.split(" ", 2)[2] for line in logged] == err  # each line after its time
    metrics = [json.loads(line) for line in (tmp_path / "run" / "metrics.jsonl").open()]
    dev = [m for m in metrics if m["kind"] == "dev"]
    assert [(m["update"], m["epoch"]) for m in dev] == [(8, 1), (16, 2)]
    assert dev[1]["dev"]["mean_abs_error"] < dev[0]["dev"]["mean_abs_error"]


def test_verbose_off_prints_nothing_and_the_log_keeps_every_line(tmp_path, capsys):
    settings = TrainSettings(epochs=1, verbose=False)
    run(Plan(tmp_path / "run", settings, "lists"), _start(tmp_path / "run", []))
    assert capsys.readouterr().err == ""
    logged = (tmp_path / "run" / "train.log").read_text(encoding="utf-8")
    assert "set up" in logged and "done (epochs)" in logged


def test_a_one_process_family_refuses_torchrun_before_it_touches_the_run(tmp_path, monkeypatch):
    monkeypatch.setenv("WORLD_SIZE", "2")
    plan = Plan(tmp_path / "run", TrainSettings(), "lists", source="exp.yaml")
    with pytest.raises(ConfigError, match="exp.yaml: this experiment trains in one process"):
        run(plan, _start(tmp_path / "run", []))
    assert not (tmp_path / "run").exists()


def test_nothing_left_to_train_returns_best_without_a_loop(tmp_path):
    started = []
    best = run(Plan(tmp_path / "run", TrainSettings(), "lists"), lambda c: started.append(c))
    assert best == tmp_path / "run" / "best" and len(started) == 1
    assert not best.exists()
