"""benchmarks/attention_cost.py run tiny: its JSON has every point (run or skipped with a reason),
the machine's limits and fractions, and slopes that are the least-squares fits of the printed
points; --plot draws a picture."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[2]
SCRIPT = REPO / "benchmarks" / "attention_cost.py"
METRICS = ("forward_s", "forward_backward_s", "forward_bytes", "forward_backward_bytes")


def test_a_tiny_run_prints_points_limits_and_slopes_fitted_to_them(tmp_path):
    command = [
        *(sys.executable, str(SCRIPT), "--impls", "explicit", "chunked", "--lengths", "32", "64"),
        *("--repeats", "1", "--batch", "2", "--heads", "2", "--dim", "8", "--chunk", "16"),
        *("--matmul-size", "64", "--copy-mib", "1"),
        *("--plot", str(tmp_path / "cost.png")),
    ]
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": str(REPO / "src")}
    done = subprocess.run(command, capture_output=True, text=True, env=env, timeout=600)
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert {"machine", "settings", "memory_method", "points", "slopes", "best_fraction"} <= set(
        result
    )
    assert result["machine"]["matmul_flops"] > 0 and result["machine"]["copy_bytes_per_s"] > 0
    assert [(p["impl"], p["length"]) for p in result["points"]] == [
        ("explicit", 32),
        ("explicit", 64),
        ("chunked", 32),
        ("chunked", 64),
    ]
    for point in result["points"]:
        assert point.get("skipped") is None, point
        assert point["forward_s"] > 0 and point["forward_backward_s"] > 0
        assert 0 < point["forward_flops_fraction"] and 0 < point["forward_bytes_fraction"]
    for impl in ("explicit", "chunked"):
        ran = [p for p in result["points"] if p["impl"] == impl]
        x = np.log([p["length"] for p in ran])
        for metric in METRICS:
            values = [p[metric] for p in ran]
            if any(v is None or v <= 0 for v in values):  # memory below the counter's resolution
                assert result["slopes"][impl][metric] is None
                continue
            fitted = np.polyfit(x, np.log(values), 1)[0]
            assert abs(result["slopes"][impl][metric] - fitted) < 1e-9
    assert (tmp_path / "cost.png").stat().st_size > 0


def test_points_estimated_above_the_cap_are_skipped_with_the_reason():
    command = [
        *(sys.executable, str(SCRIPT), "--impls", "explicit", "linear", "--lengths", "4096"),
        *("--repeats", "1", "--heads", "1", "--dim", "8", "--cap-gib", "0.1"),
        *("--matmul-size", "64", "--copy-mib", "1"),
    ]
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": str(REPO / "src")}
    done = subprocess.run(command, capture_output=True, text=True, env=env, timeout=600)
    assert done.returncode == 0, done.stderr
    explicit, linear = json.loads(done.stdout)["points"]
    # explicit: 5 (n, n) float32 matrices of 4096^2 = 320 MiB, above the cap of 102 MiB
    assert explicit["skipped"].startswith("estimated 0.3 GiB > cap 0.1 GiB")
    assert "forward_s" not in explicit
    assert "skipped" not in linear and linear["forward_s"] > 0
