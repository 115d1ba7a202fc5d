"""benchmarks/faults.py: one fast case through the real CLI, and the shape of its JSON line.

The whole matrix takes minutes and is run by hand (docs/RESULTS.md records its result).
"""

import json
import subprocess
import sys
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]
HARNESS = REPO_ROOT / "benchmarks" / "faults.py"


def _run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, str(HARNESS), *args],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=REPO_ROOT,
    )


def test_list_names_every_case_with_its_issue_item():
    proc = _run("--list")
    assert proc.returncode == 0, proc.stderr
    rows = [line.split("\t") for line in proc.stdout.splitlines()]
    assert len(rows) >= 60
    assert len({name for name, _ in rows}) == len(rows), "case names must be unique"
    bounded = {f"b{n}" for n in range(1, 9)}  # the issue "Bounded against hostile input"
    families = {"f44"}  # every family bounded: the families' readers and checkpoints
    known = {"held", "fuzz", "3", "4", "5", "6", "7", "8"} | bounded | families
    assert {item for _, item in rows} <= known
    assert {item for _, item in rows} >= bounded - {"b9"}


def test_one_case_that_holds_prints_one_json_line():
    proc = _run("--only", "config_unknown_top_level_key", "--jobs", "1")
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.strip().splitlines()
    assert len(lines) == 1, proc.stdout
    result = json.loads(lines[0])
    assert set(result) == {"cases", "held", "failed", "failed_cases", "skipped", "seconds"}
    assert (result["cases"], result["held"], result["failed"]) == (1, 1, 0), result
    assert result["failed_cases"] == [] and result["skipped"] == []
    assert "config_unknown_top_level_key" in proc.stderr  # the progress line
