"""benchmarks/explain_speed.py, saliency_table.py and alignment_misses.py on a small numbers
model: they run the real command, and report what they measured, one JSON object or line per
model."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "unit"))  # the unit tests' model
from test_serve_app import train_numbers_model  # noqa: E402

pytestmark = pytest.mark.slow
REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    """Two run directories of the German numbers task: with attention, and without."""
    root = tmp_path_factory.mktemp("runs")
    return [
        train_numbers_model(root / "numbers_bahdanau" / "best", steps=30),
        train_numbers_model(root / "numbers_none" / "best", steps=30, attention="none"),
    ]


def _run(script: str, *args: str) -> str:
    done = subprocess.run(
        [sys.executable, str(REPO / "benchmarks" / script), *args],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout


def test_explain_speed_times_the_command_and_its_stages(models):
    args = ["--model", str(models[0]), "--rounds", "1", "--text", "elf"]
    report = json.loads(_run("explain_speed.py", *args, "--methods", "integrated_gradients"))
    (result,) = report["results"].values()
    assert list(report["results"]) == ["integrated_gradients"]
    assert len(result["command_s"]) == len(result["in_process_s"]) == 1  # one round each
    stages = result["stages_s_median"]
    assert list(stages) == ["load", "decode", "force", "saliency", "draw"]
    assert all(v > 0 for v in stages.values())
    assert result["stages_total_s_median"] == pytest.approx(sum(stages.values()), abs=2e-3)
    # the command does all the in-process work, and starts an interpreter and imports besides
    assert result["command_s_median"] > result["imports_s_median"] > 0
    assert result["command_s_median"] > result["in_process_s_median"] > 0


def test_saliency_table_scores_attention_and_saliency_against_gold(models, tmp_path):
    out = _run("saliency_table.py", *map(str, models), "--count", "5", "--out", str(tmp_path))
    lines = out.strip().splitlines()
    first, second = json.loads(lines[0]), json.loads(lines[1])
    assert first["examples"] == 5 and first["explained"] == "reference"
    assert 0.0 <= first["attention"]["aer"] <= 100.0 and 0.0 <= first["saliency"]["aer"] <= 100.0
    assert second["attention"] == "none" and "argmax_agreement" not in second
    rows = [line for line in lines if line.startswith("| numbers_")]
    assert rows[0].startswith("| numbers_bahdanau (bahdanau) | ")
    assert rows[1].startswith("| numbers_none (none) | no attention | ")
    assert (tmp_path / "numbers_bahdanau" / "report.html").is_file()


def test_alignment_misses_are_counted_by_distance_and_position(models):
    (line,) = _run("alignment_misses.py", str(models[0]), "--count", "5").strip().splitlines()
    report = json.loads(line)
    assert report["examples"] == 5 and 0 < report["linked"]
    assert 0 <= report["misses"] <= report["linked"]
    assert sum(report["misses_by_distance"].values()) == report["misses"]
    assert all(int(d) >= 1 for d in report["misses_by_distance"])  # a miss is off the span
    positions = report["by_output_position"].values()
    assert sum(linked for linked, _ in positions) == report["linked"]
    assert sum(missed for _, missed in positions) == report["misses"]


def test_faithfulness_compares_saved_answers_by_accuracy_f1_and_seed_variance(tmp_path):
    """benchmarks/faithfulness.py --maps: accuracy and F1 of the last class counted by hand, the
    seed variance zero between identical maps and positive between different ones, and a model
    without attention (the uniform baseline) left out of it."""

    def answers(name: str, predicted: list[int], weights) -> Path:
        gold = [1, 0, 1, 1]
        items = [
            {"words": ["a", "b"], "label": g, "probs": [1.0 - p, float(p)], "weights": w}
            for g, p, w in zip(gold, predicted, weights)
        ]
        path = tmp_path / name / "test_maps.json"
        path.parent.mkdir()
        path.write_text(json.dumps(items), encoding="utf-8")
        return path

    peaked = [[0.9, 0.1]] * 4
    paths = [
        answers("seed0", [1, 0, 1, 0], peaked),  # 3 of 4 right; positives: tp 2, fn 1, fp 0
        answers("seed1", [1, 1, 1, 1], peaked),  # 3 of 4; tp 3, fp 1: F1 6/7
        answers("mean", [1, 0, 0, 0], [None] * 4),
    ]
    args = [a for p in paths for a in ("--maps", str(p))]
    out = json.loads(_run("faithfulness.py", *args))
    models = out["models"]
    assert models["seed0"]["accuracy"] == 75.0 and models["seed0"]["f1_last_class"] == 0.8
    assert models["seed1"]["f1_last_class"] == round(6 / 7, 4)
    assert models["mean"]["accuracy"] == 50.0 and models["mean"]["attention"] == "none"
    assert out["seed_variance"]["pairs"] == 1 and out["seed_variance"]["mean_jsd"] == 0.0
    assert out["first_model_jsd_from_uniform"] > 0.1
    paths[1].write_text(paths[1].read_text().replace("0.9, 0.1", "0.5, 0.5"), encoding="utf-8")
    assert json.loads(_run("faithfulness.py", *args))["seed_variance"]["mean_jsd"] > 0.1
