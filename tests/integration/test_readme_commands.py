"""benchmarks/readme_commands.py: every ``attnkit`` command in README.md and docs/USAGE.md parses
and reads only paths that exist or that an earlier command of theirs writes (checked), and their
commands run as written, in order, in a scratch copy of the repository (``--run``: the demo and
what reads its output run; the trainings of minutes and the servers are skipped by name)."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from repo_scripts import load_script

REPO_ROOT = Path(__file__).resolve().parents[2]
SCRIPT = REPO_ROOT / "benchmarks" / "readme_commands.py"


def _module():
    return load_script("benchmarks/readme_commands.py")


def test_every_readme_command_is_valid():
    proc = subprocess.run(
        [sys.executable, str(SCRIPT)], capture_output=True, text=True, timeout=120, cwd=REPO_ROOT
    )
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    assert result["problems"] == [] and proc.returncode == 0, result
    assert result["commands"] >= 15  # the Commands block alone holds more


def test_the_checked_documents_are_the_readme_and_the_usage_guide():
    module = _module()
    assert module.DOCUMENTS[0] == "README.md" and "docs/USAGE.md" in module.DOCUMENTS
    names = {doc for doc, _ in module.read_documents()}
    commands = [
        c for c in module.commands(module.read_documents()) if isinstance(c, module.Command)
    ]
    assert {c.doc for c in commands} == names  # each document holds commands that are checked


def test_every_multi30k_config_is_trained_by_a_readme_command():
    """The checked commands include a training of each shipped Multi30k pair (de/en, en/fr)."""
    module = _module()
    trained = {
        command.argv[1]
        for command in module.commands(module.read_documents())
        if isinstance(command, module.Command) and command.argv[:1] == ["train"]
    }
    shipped = {f"configs/{p.name}" for p in (REPO_ROOT / "configs").glob("multi30k_*.yaml")}
    assert {"configs/multi30k_en_fr.yaml", "configs/multi30k_fr_en.yaml"} <= shipped
    assert shipped <= trained, shipped - trained


def test_the_check_finds_what_a_reader_would_trip_on():
    readme = "\n".join(
        [
            "```bash",
            "attnkit demo --quick --out runs/q && attnkit translate --model runs/q/model/best x",
            "attnkit evaluate --model runs/nowhere/best      # a run no command made",
            "attnkit train configs/missing.yaml",
            "attnkit plot --model runs/q/model/best --bogus x -o a.svg",
            "printf 'a\\tb\\n' > mine.tsv",
            "attnkit evaluate --model runs/q/model/best --tsv mine.tsv < absent.txt",
            "attnkit train configs/numbers_bahdanau.yaml --resume",
            "attnkit plot --model runs/q/model/best --image 7 -o a.png",
            "attnkit plot --model runs/q/model/best --image my_digit.jpg -o b.png",
            "attnkit train \\",
            "    CONFIG --set train.lr=1",
            "```",
        ]
    )
    checked, problems = _module().check(readme)
    assert checked == 10
    assert len(problems) == 6, problems
    assert "README.md:3:" in problems[0] and "runs/nowhere/best" in problems[0]
    assert "no config file configs/missing.yaml" in problems[1]
    assert "does not parse" in problems[2] and "--bogus" in problems[2]
    assert problems[3].endswith("reads absent.txt, which neither exists nor is written before")
    assert "runs/numbers_bahdanau/last" in problems[4]  # --resume needs an earlier run
    assert problems[5].endswith("reads my_digit.jpg, which neither exists nor is written before")


def test_a_later_document_reads_what_an_earlier_one_writes_and_problems_name_their_document():
    readme = "\n".join(["# x", "```bash", "attnkit demo --quick --out runs/q", "```"])
    usage = "\n".join(
        [
            "```bash",
            "attnkit translate --model runs/q/model/best x   # the README's demo wrote it",
            "attnkit translate --model runs/elsewhere/best x",
            "```",
        ]
    )
    module = _module()
    checked, problems = module.check([("README.md", readme), ("docs/USAGE.md", usage)])
    assert checked == 3
    assert len(problems) == 1 and problems[0].startswith("docs/USAGE.md:3: "), problems
    assert "runs/elsewhere/best" in problems[0]
    alone, problems = module.check([("docs/USAGE.md", usage)])  # without the README's demo
    assert alone == 2 and len(problems) == 2 and problems[0].startswith("docs/USAGE.md:2: ")


def _plan_readme(*lines: str) -> str:
    return "\n".join(["```bash", *lines, "```"])


def test_the_run_skips_long_commands_by_name_and_what_reads_their_output():
    module = _module()
    readme = _plan_readme(
        "attnkit demo --quick --out runs/q && attnkit translate --model runs/q/model/best x",
        "attnkit train configs/numbers_bahdanau.yaml      # trains for minutes",
        "attnkit evaluate --model runs/numbers_bahdanau/best --beam 5",
        "attnkit train configs/numbers_bahdanau.yaml --resume",
        "echo 'a && b' | attnkit translate --model runs/numbers_bahdanau-seed2/best -",
        "attnkit train configs/numbers_bahdanau.yaml --set train.seed=2 \\",
        "    --output-dir runs/numbers_bahdanau-seed2",
        "echo x | attnkit translate --model runs/numbers_bahdanau-seed2/best -; echo done",
        "attnkit translate --model runs/q/model/best - < README.md > out.txt",
        "attnkit serve --model runs/q/model/best",
    )
    long = {
        "attnkit train configs/numbers_bahdanau.yaml": "8 minutes",
        "attnkit   serve --model 'runs/q/model/best'  # a comment": "a server",
        "attnkit train configs/numbers_bahdanau.yaml --set train.seed=2 "
        "--output-dir runs/numbers_bahdanau-seed2": "8 minutes, seed 2",
        "attnkit train configs/gone.yaml": "no such command",
    }
    the_plan = module.plan(readme, long)
    decided = [(step.line, step.raw, reason) for step, reason in the_plan.steps]
    train = "attnkit train configs/numbers_bahdanau.yaml"
    seed2 = "attnkit train configs/numbers_bahdanau.yaml --set train.seed=2 " + (
        " --output-dir runs/numbers_bahdanau-seed2"
    )
    assert decided == [
        (2, "attnkit demo --quick --out runs/q", None),
        (2, "attnkit translate --model runs/q/model/best x", None),
        (3, train, "8 minutes"),
        (4, "attnkit evaluate --model runs/numbers_bahdanau/best --beam 5", f"depends on {train}"),
        (5, "attnkit train configs/numbers_bahdanau.yaml --resume", f"depends on {train}"),
        (6, "echo 'a && b' | attnkit translate --model runs/numbers_bahdanau-seed2/best -", None),
        (7, seed2, "8 minutes, seed 2"),
        (
            9,
            "echo x | attnkit translate --model runs/numbers_bahdanau-seed2/best -",
            f"depends on {seed2}",
        ),
        (9, "echo done", None),
        (10, "attnkit translate --model runs/q/model/best - < README.md > out.txt", None),
        (11, "attnkit serve --model runs/q/model/best", "a server"),
    ]
    assert the_plan.inputs == ["README.md"]  # read from the repository: copied
    assert the_plan.stale == ["attnkit train configs/gone.yaml"]


def test_the_run_runs_as_written_in_a_scratch_copy_and_reports_failures(tmp_path):
    module = _module()
    readme = _plan_readme(
        "printf 'x\\n' > made.txt && cat made.txt > copy.txt",
        'command -v attnkit > which.txt; printf "%s" "$PYTHONPATH" > path.txt',
        "test -f configs/numbers_bahdanau.yaml && ls runs",
        "attnkit translate --model runs/nowhere/best x",
        "sleep 60",
        "attnkit train configs/numbers_bahdanau.yaml",
        "attnkit evaluate --model runs/numbers_bahdanau/best",
    )
    options = module.RunOptions(
        timeout=10,
        keep=True,
        long={"attnkit train configs/numbers_bahdanau.yaml": "long"},
        parent=tmp_path,
    )
    result = module.run(readme, options)
    work = Path(result["workdir"])
    ran = [item["command"] for item in result["run"]]
    assert ran == [
        "printf 'x\\n' > made.txt",
        "cat made.txt > copy.txt",
        "command -v attnkit > which.txt",
        'printf "%s" "$PYTHONPATH" > path.txt',
        "test -f configs/numbers_bahdanau.yaml",
    ]
    assert (work / "copy.txt").read_text() == "x\n"
    # this tree's attnkit, by this Python
    assert Path((work / "which.txt").read_text().strip()).parent == work.parent / "bin"
    assert (work / "path.txt").read_text().split(os.pathsep)[0] == str(REPO_ROOT / "src")
    failed = {item["command"]: item for item in result["failed"]}
    assert list(failed) == ["ls runs", "attnkit translate --model runs/nowhere/best x", "sleep 60"]
    assert failed["ls runs"]["status"] == 2 and "runs" in failed["ls runs"]["stderr"]
    no_model = failed["attnkit translate --model runs/nowhere/best x"]
    assert no_model["status"] == 2 and "runs/nowhere/best" in no_model["stderr"]
    assert failed["sleep 60"]["status"] == "timed out after 10 s"
    assert [item["reason"] for item in result["skipped"]] == [
        "long",
        "depends on attnkit train configs/numbers_bahdanau.yaml",
    ]
    assert result["problems"] == []


@pytest.mark.slow
def test_every_readme_command_runs_as_written_but_the_long_ones():
    """The README's commands, run in order (the demo as written: 1 to 3 minutes on 2 CPUs)."""
    proc = subprocess.run(
        [sys.executable, str(SCRIPT), "--run", "--timeout", "420"],
        capture_output=True,
        text=True,
        timeout=1200,
        cwd=REPO_ROOT,
    )
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    assert result["failed"] == [] and result["problems"] == [] and proc.returncode == 0, result
    ran = {item["command"] for item in result["run"]}
    assert "attnkit demo" in ran
    module = _module()
    readers = [
        step.raw
        for step, reason in module.plan(module.read_documents()).steps
        if "runs/demo/" in step.raw and module._name(step.raw) not in map(module._name, module.LONG)
    ]
    assert {step.split()[1] for step in readers if step.startswith("attnkit")} >= {
        "translate",
        "evaluate",
        "plot",
        "explain",
    }
    assert set(readers) <= ran, set(readers) - ran
