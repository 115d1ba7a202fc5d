"""benchmarks/precision.py: bad arguments are refused in one line, the mean over seeds, and a
tiny run (one update each) that trains both precisions alike and scores them."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from repo_scripts import load_script

REPO = Path(__file__).resolve().parents[2]
SCRIPT = REPO / "benchmarks" / "precision.py"


def _bench():
    return load_script("benchmarks/precision.py")


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--seeds", "1,1"], "give each seed once"),
        (["--seeds", "one"], "expected comma-separated integers"),
        (["--precisions", "fp32,fp8"], "each one of fp32, bf16, fp16"),
        (["--epochs", "0"], "--epochs must be at least 1"),
        (["--configs", "configs/no_such.yaml"], "no_such.yaml: no such experiment file"),
    ],
)
def test_bad_arguments_are_refused_in_one_line(argv, message, capsys):
    with pytest.raises(SystemExit) as stop:
        _bench().main(argv)
    assert stop.value.code == 2
    assert message in capsys.readouterr().err.strip().splitlines()[-1]


def test_the_mean_is_over_the_seeds_of_each_precision_and_skips_failed_runs():
    run = {"test_exact_match": 10.0, "dev_best": 20.0, "train_update_s": 4.0, "tokens_per_s": 100}
    runs = [
        {"precision": "fp32", "seed": 1, **run},
        {"precision": "bf16", "seed": 1, **run, "test_exact_match": 30.0},
        {"precision": "fp32", "seed": 2, **run, "test_exact_match": 20.0, "tokens_per_s": 300},
        {"precision": "bf16", "seed": 2, "error": "attnkit train exited 1"},
    ]
    mean = _bench().summary(runs)
    assert list(mean) == ["fp32", "bf16"]
    assert mean["fp32"]["test_exact_match"] == 15.0 and mean["fp32"]["tokens_per_s"] == 200
    assert mean["fp32"]["seeds"] == [1, 2]
    assert mean["bf16"]["test_exact_match"] == 30.0 and mean["bf16"]["seeds"] == [1]


def test_a_tiny_run_trains_both_precisions_alike(tmp_path):
    sets = ("data.max_number=49", "data.languages=[en]", "train.batch_size=128")  # 80 pairs
    command = [
        *(sys.executable, str(SCRIPT), "--configs", "configs/numbers_transformer.yaml"),
        *("--seeds", "3", "--epochs", "1", "--runs", str(tmp_path / "runs")),
        *(x for s in sets for x in ("--set", s)),
        *("--json", str(tmp_path / "out.json")),
    ]
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": str(REPO / "src")}
    done = subprocess.run(command, capture_output=True, text=True, env=env, cwd=REPO, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    result = json.loads((tmp_path / "out.json").read_text(encoding="utf-8"))
    assert json.loads(done.stdout.strip().splitlines()[-1]) == result
    runs = result["configs"]["numbers_transformer"]["runs"]
    assert [(r["precision"], r["seed"]) for r in runs] == [("fp32", 3), ("bf16", 3)]
    for r in runs:
        assert "error" not in r, r
        assert r["updates"] == 1 and r["epochs"] == 1
        assert 0 <= r["test_exact_match"] <= 100
        assert r["train_update_s"] > 0 and r["tokens_per_s"] > 0 and len(r["load_after"]) == 3
        saved = tmp_path / "runs" / f"numbers_transformer-{r['precision']}-seed3" / "last"
        train = yaml.safe_load((saved / "config.yaml").read_text(encoding="utf-8"))["train"]
        assert (train["precision"], train["seed"], train["backend"]) == (r["precision"], 3, "fused")
    assert runs[0]["train_target_tokens"] == runs[1]["train_target_tokens"]  # the same batch
    assert set(result["configs"]["numbers_transformer"]["mean"]) == {"fp32", "bf16"}
