"""benchmarks/readme_commands.py: every ``attnkit`` command in README.md parses and reads only
paths that exist or that an earlier README command writes (checked, not run: the trainings take
minutes to hours)."""

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]
SCRIPT = REPO_ROOT / "benchmarks" / "readme_commands.py"


def _module():
    spec = importlib.util.spec_from_file_location("readme_commands", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up
    spec.loader.exec_module(module)
    return module


def test_every_readme_command_is_valid():
    proc = subprocess.run(
        [sys.executable, str(SCRIPT)], capture_output=True, text=True, timeout=120, cwd=REPO_ROOT
    )
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    assert result["problems"] == [] and proc.returncode == 0, result
    assert result["commands"] >= 15  # the Commands block alone holds more


def test_every_multi30k_config_is_trained_by_a_readme_command():
    """The checked commands include a training of each shipped Multi30k pair (de/en, en/fr)."""
    module = _module()
    trained = {
        command.argv[1]
        for command in module.commands((REPO_ROOT / "README.md").read_text(encoding="utf-8"))
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
            "attnkit train \\",
            "    CONFIG --set train.lr=1",
            "```",
        ]
    )
    checked, problems = _module().check(readme)
    assert checked == 8
    assert len(problems) == 5, problems
    assert "README.md:3:" in problems[0] and "runs/nowhere/best" in problems[0]
    assert "no config file configs/missing.yaml" in problems[1]
    assert "does not parse" in problems[2] and "--bogus" in problems[2]
    assert problems[3].endswith("reads absent.txt, which neither exists nor is written before")
    assert "runs/numbers_bahdanau/last" in problems[4]  # --resume needs an earlier run
