"""benchmarks/capture_floor.py: every part of one attention layer timed, and the recomputation it
times is the capture's own (the kept map equals softmax(q k^T / 8))."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from repo_scripts import load_script

REPO = Path(__file__).resolve().parents[2]
SCRIPT = REPO / "benchmarks" / "capture_floor.py"


def test_a_short_run_times_every_part_and_says_its_ratios():
    command = [sys.executable, str(SCRIPT), "--threads", "1", "--length", "48", "--repeats", "1"]
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    done = subprocess.run(command, capture_output=True, text=True, env=env, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    out = json.loads(done.stdout)
    parts = ("sdpa", "recompute", "scores_written", "softmax_written", "weights_times_values")
    assert set(parts) <= set(out["time_s"]) and all(out["time_s"][p] > 0 for p in parts)
    ratio = out["time_s"]["scores_written"] / out["time_s"]["sdpa"]
    assert abs(out["floor_vs_sdpa"] - ratio) < 0.01 * max(1.0, ratio)
    assert out["length"] == 48 and out["threads"] == 1


def test_a_bad_length_is_one_line():
    done = subprocess.run(
        [sys.executable, str(SCRIPT), "--length", "0"], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 2 and "--length and --repeats must be at least 1" in done.stderr


def test_the_recomputation_timed_is_the_softmax_of_the_scores():
    import torch

    module = load_script("benchmarks/capture_floor.py")
    from attnkit.explain.capture.weights import sdpa_call, weight_chunks

    torch.manual_seed(0)
    q, k = torch.randn(1, 12, 20, 64), torch.randn(1, 12, 20, 64)
    kept = torch.empty(1, 12, 20, 20)
    for _ in weight_chunks(sdpa_call(q, k, q), into=kept):
        pass
    want = (q.double() @ k.double().transpose(-2, -1) / 8).softmax(-1)
    assert (kept.double() - want).abs().max() < 1e-6
    assert callable(module.measure)
