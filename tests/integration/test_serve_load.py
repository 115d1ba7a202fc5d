"""benchmarks/serve_load.py --smoke: the real server under a few concurrent clients, batching
on and off, every request answered correctly, one JSON line."""

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
KEYS = {"requests", "concurrency", "seconds", "requests_per_s", "p50_ms", "p95_ms", "p99_ms"}


@pytest.mark.parametrize("batching", [[], ["--no-batching"]])
def test_smoke_load_answers_every_request(tmp_path, batching):
    model = train_numbers_model(tmp_path / "numbers" / "best", steps=30)
    done = subprocess.run(
        [sys.executable, str(REPO / "benchmarks" / "serve_load.py"), "--model", str(model)]
        + ["--smoke", "--beam", "2", *batching],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    (line,) = done.stdout.strip().splitlines()
    report = json.loads(line)
    assert KEYS | {"errors", "lost", "beam", "batching", "model", "machine"} <= set(report)
    assert report["lost"] == 0 and report["errors"] == 0 and report["beam"] == 2
    assert report["requests"] == 24 and report["concurrency"] == 4
    assert 0 < report["p50_ms"] <= report["p95_ms"] <= report["p99_ms"]
    assert report["batching"]["enabled"] is not bool(batching)


def test_the_ceiling_run_asks_only_for_health(tmp_path):
    model = train_numbers_model(tmp_path / "numbers" / "best", steps=5)
    done = subprocess.run(
        [sys.executable, str(REPO / "benchmarks" / "serve_load.py"), "--model", str(model)]
        + ["--smoke", "--healthz"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert report["endpoint"] == "/healthz" and report["lost"] == 0 and report["errors"] == 0
