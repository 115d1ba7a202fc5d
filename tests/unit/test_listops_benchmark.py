"""benchmarks/listops.py: its Pareto front, its argument checks, a tiny ListOps run whose JSON has
every implementation asked for with the same number of updates, an accuracy, a time, a memory and
a picture, and a tiny numbers-task run (the non-ListOps path) with the default path beside local."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest
from repo_scripts import load_script

REPO = Path(__file__).resolve().parents[2]
SCRIPT = REPO / "benchmarks" / "listops.py"


def _bench():
    return load_script("benchmarks/listops.py")


def test_the_pareto_front_keeps_the_points_nothing_beats():
    pareto = _bench().pareto
    # (cost, accuracy): c is beaten by b (cheaper and better), d is the most accurate
    points = [(1.0, 10.0), (2.0, 30.0), (3.0, 20.0), (5.0, 40.0), (0.5, 5.0)]
    assert pareto(points) == [4, 0, 1, 3]
    assert pareto([(1.0, 5.0), (1.0, 7.0)]) == [1]  # the same cost: the better one only
    assert pareto([]) == []


def test_token_accuracy_counts_the_references_characters_in_place():
    token_accuracy = _bench().token_accuracy
    # "12 3" against "12 4": 3 of 4 in place; an unknown output is one wrong token, so the "5"
    # after it is still in place; a short hypothesis loses what it lacks
    assert token_accuracy(["12 3", "<unk>5", "7"], ["12 4", "45", "789"]) == round(100 * 5 / 9, 2)
    assert token_accuracy(["ab"], ["ab"]) == 100.0 and token_accuracy([""], ["ab"]) == 0.0


def test_a_tiny_run_scores_every_implementation_asked_for(tmp_path):
    data = ("data.dev_size=8", "data.test_size=20", "data.min_length=8", "data.max_length=30")
    command = [
        *(sys.executable, str(SCRIPT), "--impls", "explicit", "linear"),
        *("--epochs", "1", "--train-size", "32", "--runs", str(tmp_path / "runs")),
        *(x for s in (*data, "data.max_src_len=31") for x in ("--set", s)),
        *("--json", str(tmp_path / "out.json"), "--plot", str(tmp_path / "pareto.png")),
    ]
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    done = subprocess.run(command, capture_output=True, text=True, env=env, timeout=900)
    assert done.returncode == 0, done.stderr[-2000:]
    result = json.loads((tmp_path / "out.json").read_text(encoding="utf-8"))
    runs = result["implementations"]
    assert list(runs) == ["explicit", "linear"]
    for impl, run in runs.items():
        assert "error" not in run, run
        assert run["updates"] == 1  # 32 expressions, batches of 32, one epoch
        assert 0 <= run["test_accuracy"] <= 100
        assert run["train_update_s"] > 0 and run["peak_rss_mib"] > result["baseline_rss_mib"]
        # one update: the same seconds, train_update_s rounded to the millisecond, update_s to
        # 0.1 ms (0.0405 s is 0.041 and 0.0405)
        assert run["update_s"] == pytest.approx(run["train_update_s"], abs=1e-3)
        assert run["train_cpu_s"] > result["baseline_cpu_s"] > 0
        assert 0 <= run["test_token_accuracy"] <= 100
        assert f"model.attention_impl={impl}" in run["overrides"]
    assert 10 <= result["majority"] <= 100  # ten answers: the commonest holds a tenth at least
    assert result["data"].startswith("lengths 8-30")
    assert (tmp_path / "pareto.png").stat().st_size > 0


def test_items_in_place_count_each_number_at_its_own_place(tmp_path, monkeypatch):
    bench = _bench()
    # "1 22 3" against "1 2 3 4": the 1st and 3rd right; "5" against "5 6": the 1st right
    scores = bench.items_in_place(["1 22 3", "5"], ["1 2 3 4", "5 6"])
    assert scores == {"test_items_in_place": round(100 * 3 / 6, 2),
                      "test_items_by_place": [100.0, 0.0, 100.0, 0.0]}  # fmt: skip
    # --rescore reads the outputs a run left and scores them against the same test split
    (tmp_path / "local.eval").mkdir()
    (tmp_path / "local.eval" / "hyps.greedy.txt").write_text("1 22 3\n5\n", encoding="utf-8")
    monkeypatch.setattr(bench, "scored_split", lambda args: [("", "1 2 3 4"), ("", "5 6")])
    args = bench.parse_args(["--rescore", "--impls", "local", "linear", "--runs", str(tmp_path)])
    rescored = bench.rescore(args)["rescored"]
    assert rescored["local"]["test_items_by_place"] == [100.0, 0.0, 100.0, 0.0]
    assert rescored["local"]["test_token_accuracy"] == round(100 * 4 / 10, 2)  # 3 of 7, 1 of 3
    assert "no " in rescored["linear"]["error"]  # no outputs left for it


def test_the_token_floor_is_the_best_constant_guess_place_by_place(monkeypatch):
    bench = _bench()
    splits = SimpleNamespace(
        train=[("", "12 4"), ("", "13 5"), ("", "92 4"), ("", "12")], test=[("", "12 4"), ("", "7")]
    )
    monkeypatch.setattr(bench, "data_section", lambda args: {})
    monkeypatch.setattr("attnkit.data.tasks.registry.data_from_dict", lambda section: section)
    monkeypatch.setattr("attnkit.data.tasks.registry.build_splits", lambda cfg: splits)
    # median length 4; by place "1", "2", " ", "4": all 4 of "12 4", none of "7"
    assert bench.majority_token_share(None) == round(100 * 4 / 5, 2)


def test_bad_arguments_are_refused_in_one_line(capsys, tmp_path):
    parse = _bench().parse_args
    cases = {
        ("--jobs", "3"): "--jobs: 1 or 2",
        ("--epochs", "0"): "--epochs: must be at least 1, got 0",
        ("--window", "-1"): "--window: must be at least 1, got -1",
        ("--impls", "auto", "auto"): "--impls: each implementation once",
        ("--impls", "quadratic"): "invalid choice: 'quadratic'",
        ("--config", str(tmp_path / "none.yaml")): "--config: no such file",
        ("--score", "bleu"): "invalid choice: 'bleu'",
    }
    for argv, message in cases.items():
        with pytest.raises(SystemExit) as stop:
            parse(list(argv))
        assert stop.value.code == 2
        assert message in capsys.readouterr().err, argv
    assert parse(["--impls", "auto", "local", "--jobs", "2"]).impls == ["auto", "local"]


def test_the_numbers_task_runs_with_the_default_path_as_reference(tmp_path):
    """The non-ListOps path: the numbers Transformer, ``auto`` beside ``local`` (a window of 2
    on inputs of up to 14 characters), two at once; no LRA figure, the data named by task."""
    data = ("data.languages=[en]", "data.max_number=99", "train.batch_size=16")
    command = [
        *(sys.executable, str(SCRIPT), "--config", str(REPO / "configs/numbers_transformer.yaml")),
        *("--impls", "auto", "local", "--window", "2", "--epochs", "1", "--jobs", "2"),
        *("--runs", str(tmp_path / "runs"), "--json", str(tmp_path / "out.json")),
        *("--score", "token", "--plot", str(tmp_path / "pareto.png")),
        *(x for s in data for x in ("--set", s)),
    ]
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    done = subprocess.run(command, capture_output=True, text=True, env=env, timeout=900)
    assert done.returncode == 0, done.stderr[-2000:]
    result = json.loads((tmp_path / "out.json").read_text(encoding="utf-8"))
    assert result["data"].startswith("numbers, languages ['en']")
    assert result["jobs"] == 2
    runs = result["implementations"]
    assert list(runs) == ["auto", "local"]
    for run in runs.values():
        assert "error" not in run, run
        assert run["updates"] == 5  # 80 training pairs (0-99, 10% dev, 10% test), batches of 16
        assert 0 <= run["test_accuracy"] <= 100 and run["lra_listops"] is None
        assert 0 <= run["test_token_accuracy"] <= 100  # partial credit: 100 only if all exact
        assert run["test_token_accuracy"] == 100 or run["test_accuracy"] < 100
        assert "train.patience=null" in run["overrides"]  # early stopping off
    assert "model.attention_window=2" in runs["local"]["overrides"]
    assert result["score"] == "token" and (tmp_path / "pareto.png").stat().st_size > 0
    assert 0 < result["majority_token"] < 100  # a constant output: some places, never all
