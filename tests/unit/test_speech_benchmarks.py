"""benchmarks/speech.py, speech_length.py and speech_voices.py run tiny: every model trained and
scored on held-out voices (LAS with its attention against the gold timings, CTC without), the
length curve and the per-voice figures written as JSON."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("espeakng_loader")

REPO = Path(__file__).resolve().parents[2]


def _run(script: str, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": str(REPO / "src")}
    command = [sys.executable, str(REPO / "benchmarks" / script), *args]
    done = subprocess.run(command, capture_output=True, text=True, env=env, timeout=900)
    assert done.returncode == 0, done.stderr
    return done


def test_the_speech_benchmarks_run_tiny(tmp_path):
    runs = tmp_path / "runs"
    sets = [
        *("data.languages=[en]", "data.max_number=19", f"data.directory={tmp_path / 'audio'}"),
        *("train.epochs=1", "train.batch_size=4", "model.listener_hidden=8"),
        *("model.speller_hidden=16", "model.attention_dim=8"),
    ]
    out = tmp_path / "speech.json"
    _run(
        "speech.py",
        "--runs",
        str(runs),
        "--out",
        str(out),
        *(x for s in sets for x in ("--set", s)),
    )
    doc = json.loads(out.read_text())
    rows = {row["model"]: row for row in doc["runs"]}
    assert set(rows) == {"las_content", "las_location", "ctc"}
    for name, row in rows.items():
        assert set(row["test"]["en"]) == {"exact_match", "cer", "wer"} and row["updates"] == 4
        assert ("alignment" in row) == (name != "ctc")
    assert 0 <= rows["las_location"]["alignment"]["aer"] <= 100
    assert len(doc["loadavg_before"]) == 3
    # the splits were made once, before the models: their features are the three in the cache
    assert doc["prepare_cpu_s"] > 0
    assert len(list((tmp_path / "audio").glob("features-*.safetensors"))) == 3
    curve = tmp_path / "length.json"
    _run(
        "speech_length.py",
        "--runs",
        str(runs),
        "--max-digits",
        "2",
        "--per",
        "1",
        "--out",
        str(curve),
    )
    rows = json.loads(curve.read_text())["curve"]
    assert [row["digits"] for row in rows] == [1, 2] and rows[0]["ctc"]["exact_match"] >= 0
    voices = tmp_path / "voices.json"
    _run("speech_voices.py", "--runs", str(runs), "--models", "ctc", "--out", str(voices))
    (row,) = json.loads(voices.read_text())["runs"]
    assert set(row["test"]) <= {"m7", "f4", "klatt3"} and set(row["dev"]) <= {"m8", "f5"}
    languages = tmp_path / "languages.json"
    _run(
        "speech_voices.py",
        *("--runs", str(runs), "--models", "las_location", "--by", "language"),
        *("--splits", "test", "--data-dir", str(tmp_path / "audio"), "--out", str(languages)),
    )
    (row,) = json.loads(languages.read_text())["runs"]
    assert set(row) == {"model", "by", "test"} and set(row["test"]) == {"en"}
    assert row["test"]["en"]["items"] == 2 and 0 <= row["test"]["en"]["aer"] <= 100
