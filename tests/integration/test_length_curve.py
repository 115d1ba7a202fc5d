"""benchmarks/length_curve.py end to end on tiny data: three models trained, scored by length,
drawn and written as JSON."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow
REPO = Path(__file__).resolve().parents[2]


def test_smoke_run_writes_the_curve(tmp_path):
    out = tmp_path / "curve"
    done = subprocess.run(
        [
            sys.executable,
            str(REPO / "benchmarks" / "length_curve.py"),
            "--smoke",
            "--out",
            str(out),
        ],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    report = json.loads((out / "length_curve.json").read_text(encoding="utf-8"))
    assert set(report["results"]) == {"none", "bahdanau", "luong-general"}
    for result in report["results"].values():
        buckets = result["buckets"]
        assert sum(b["items"] for b in buckets) == report["sizes"]["test"]
        assert all(0.0 <= b["exact_match"] <= 100.0 and b["cer"] >= 0.0 for b in buckets)
        starts = [b["source_chars"][0] for b in buckets]
        assert starts == sorted(starts) and len(set(starts)) == len(starts)
    assert (out / "length_curve.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
