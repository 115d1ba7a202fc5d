"""benchmarks/faults.py: one fast case through the real CLI, and the shape of its JSON line;
the zygote its commands are forked from (benchmarks/faults_zygote.py) keeps each command's exit
status, output, directory, stdin, time limit and address-space cap.

The whole matrix takes minutes and is run by hand (docs/RESULTS.md records its result).
"""

import importlib
import json
import os
import re
import subprocess
import sys
from pathlib import Path

from attnkit.families import FAMILIES, Family, registered

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


def test_one_case_holds_with_fresh_interpreters_too():
    proc = _run("--only", "config_unknown_top_level_key", "--jobs", "1", "--no-fork")
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout.strip().splitlines()[-1])["held"] == 1


def test_a_forked_command_is_a_process_of_its_own(tmp_path, monkeypatch):
    """Exit status, stdout/stderr, working directory and stdin as a fresh ``python -m attnkit``;
    its CPU budget and its stall guard (no CPU gained for a while) kill its process group; the
    cap stops an allocation; RSS and CPU come back."""
    monkeypatch.syspath_prepend(str(REPO_ROOT / "benchmarks"))
    from faults_zygote import Zygote

    env = dict(os.environ, PYTHONPATH=str(REPO_ROOT / "src"), OMP_NUM_THREADS="1")
    zygote = Zygote(env, tmp_path / "z.sock")
    try:
        out = zygote.run(["--version"], tmp_path, b"", 60)
        assert (out["rc"], out["stdout"].split()[0], out["stderr"]) == (0, "attnkit", "")
        assert out["rss_kb"] > 10_000 and 0 < out["cpu_s"] < 30
        out = zygote.run(["evaluate", "--model", "nowhere"], tmp_path, b"", 60)
        assert out["rc"] == 2 and out["stderr"].startswith("attnkit: error: nowhere")
        script = tmp_path / "probe.py"
        script.write_text(
            "import os, sys, time\n"
            "print(os.getcwd(), sys.stdin.read(), ascii(sys.argv[1]))\n"
            "if sys.argv[1] == 'sleep': time.sleep(30)\n"
            "if sys.argv[1] == 'spin':\n    while True: pass\n"
            "if sys.argv[1] == 'big': bytearray(4 << 30)\n"
            "sys.exit(3)\n",
            encoding="utf-8",
        )
        out = zygote.run(["echo"], tmp_path, b"typed", 60, script=str(script))
        assert (out["rc"], out["stdout"].split()) == (3, [str(tmp_path), "typed", "'echo'"])
        out = zygote.run([b"ab\xffcd"], tmp_path, None, 60, script=str(script))  # no UTF-8
        assert out["stdout"].split()[-1] == ascii(os.fsdecode(b"ab\xffcd"))
        out = zygote.run(["spin"], tmp_path, None, 1, script=str(script))  # 1 CPU second
        assert out["rc"] == 124 and out["timed_out"] and 1 <= out["cpu_s"] < 5
        out = zygote.run(["sleep"], tmp_path, None, 60, script=str(script), stall=1)  # blocked
        assert out["rc"] == 124 and out["timed_out"] and out["seconds"] < 20
        out = zygote.run(["big"], tmp_path, None, 60, cap=3 << 30, script=str(script))
        assert out["rc"] == 1 and "MemoryError" in out["stderr"]
    finally:
        zygote.close()


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


def test_every_registered_family_has_the_registry_cases():
    """The harness iterates the registry: each family has its API, checkpoint and server cases,
    data-file cases for each file its tiny experiment reads, resume cases where it resumes."""
    names = {line.split("\t")[0] for line in _run("--list", "--item", "f44").stdout.splitlines()}
    for name, family in FAMILIES.items():
        inputs = family.fault_inputs()
        expected = {f"family_{name}_{check}" for check in ("api", "checkpoint", "serve")}
        if inputs.experiment is not None and inputs.resumes:
            expected |= {f"family_{name}_resume_{how}" for how in ("kill9", "sigterm", "full_disk")}
        if inputs.data_files:
            slugs = [re.sub(r"[^a-z0-9]+", "_", Path(d).name.lower()) for d in inputs.data_files]
            expected |= {f"family_{name}_data_fifo_{slug}" for slug in slugs}
        assert expected <= names, sorted(expected - names)


def test_a_family_that_registers_gets_the_cases_without_an_edit(monkeypatch):
    """A family registered now (its parts borrowed from the pointer family's folder) has cases
    the moment the harness module is read."""
    monkeypatch.syspath_prepend(str(REPO_ROOT / "benchmarks"))
    newcomer = Family(
        name="newcomer",
        package="attnkit.families.pointer",
        model="model:PointerModel",
        train="train:train",
    )
    with registered(newcomer):
        for module in ("faults", "faults_registry"):
            sys.modules.pop(module, None)
        harness = importlib.import_module("faults")
        names = {case.name for case in harness.CASES}
    for module in ("faults", "faults_registry"):
        sys.modules.pop(module, None)
    assert {"family_newcomer_api", "family_newcomer_checkpoint"} <= names
    assert "family_newcomer_resume_kill9" in names


def test_endless_data_files_of_two_families_end_in_one_line():
    """A quick subset of the registry cases (no model is trained): a FIFO and /dev/zero in place
    of two families' data files."""
    proc = _run(
        "--only", "family_text_data_fifo_train_tsv",
        "--only", "family_graph_data_dev_zero_nodes_tsv",
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    assert (result["cases"], result["held"]) == (2, 2), result
