"""The documents a user reads hold together: the README's test command is what CI runs, every
relative link of the docs leads to a file (and heading) that exists, the README stays short and
its command list parses with the real command line."""

import importlib.util
import re
import shlex
import sys
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]
README = REPO_ROOT / "README.md"
CI = REPO_ROOT / ".ci" / "run"


def _readme_commands():
    path = REPO_ROOT / "benchmarks" / "readme_commands.py"
    spec = importlib.util.spec_from_file_location("readme_commands", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up
    spec.loader.exec_module(module)
    return module


# ---- CI equals the README ---------------------------------------------------------------------


def readme_test_command(readme: str) -> tuple[list[str], list[str]]:
    """(install steps, test steps) of the README's test command: the shell line of its first code
    block that ends in ``python -m pytest``, split at ``&&``."""
    module = _readme_commands()
    first_block = readme.split("```", 2)[1]
    lines = [text for _, text in module.shell_lines("```" + first_block + "```")]
    command = next(line for line in lines if "pytest" in line)
    steps = [" ".join(shlex.split(part)) for part in module._split_line(command)]
    installs = [step for step in steps if step.startswith("pip install")]
    return installs, [step for step in steps if step not in installs]


def ci_commands(script: str) -> tuple[list[str], list[str]]:
    """(package installs, the steps after the last install) of ``.ci/run``: ``-q`` dropped from
    the installs, ``export`` lines left out of the steps."""
    lines = [line.strip() for line in script.splitlines()]
    lines = [line for line in lines if line and not line.startswith("#")]
    installs_at = [i for i, line in enumerate(lines) if line.startswith("pip install")]
    installs = [
        " ".join(word for word in shlex.split(lines[i]) if word != "-q") for i in installs_at
    ]
    after = lines[installs_at[-1] + 1 :] if installs_at else lines
    steps = [" ".join(shlex.split(line)) for line in after if not line.startswith("export ")]
    return installs, steps


def test_ci_runs_the_readme_test_command_step_for_step():
    readme_installs, readme_steps = readme_test_command(README.read_text(encoding="utf-8"))
    ci_installs, ci_steps = ci_commands(CI.read_text(encoding="utf-8"))
    assert readme_steps[-1] == "python -m pytest -q"
    assert ci_steps == readme_steps, (ci_steps, readme_steps)
    assert ci_installs == readme_installs, (ci_installs, readme_installs)
    assert readme_installs[0] == "pip install torch==2.13.0"  # torch first: the CPU build


def test_the_comparison_sees_a_gate_that_ci_runs_and_the_readme_does_not():
    readme = "\n".join(
        [
            "```bash",
            "pip install -e . && attnkit demo",
            'pip install -e ".[test]" && python -m pytest -q   # the tests',
            "```",
        ]
    )
    script = "\n".join(
        ["#!/bin/sh", "pip install -q -e '.[test]'", "export X=1", "ruff check src", "pytest -q"]
    )
    assert readme_test_command(readme) == (["pip install -e .[test]"], ["python -m pytest -q"])
    assert ci_commands(script) == (["pip install -e .[test]"], ["ruff check src", "pytest -q"])


# ---- links ------------------------------------------------------------------------------------

LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)\)")
FENCE = re.compile(r"^\s*```")


def _documents() -> list[Path]:
    docs = [README, *sorted((REPO_ROOT / "docs").glob("*.md"))]
    return docs + [p for p in [REPO_ROOT / "CHANGELOG.md"] if p.exists()]


def _prose(text: str) -> str:
    """``text`` without its fenced code blocks (a ``# comment`` there is no heading)."""
    out, fenced = [], False
    for line in text.splitlines():
        if FENCE.match(line):
            fenced = not fenced
            continue
        out.append("" if fenced else line)
    return "\n".join(out)


def heading_anchors(text: str) -> set[str]:
    """The anchors GitHub gives the headings of a Markdown text."""
    anchors, seen = set(), {}
    for line in _prose(text).splitlines():
        match = re.match(r"^#{1,6}\s+(.*?)\s*#*\s*$", line)
        if not match:
            continue
        slug = re.sub(r"[^\w\- ]", "", match.group(1).lower()).replace(" ", "-")
        count = seen.get(slug, 0)
        seen[slug] = count + 1
        anchors.add(slug if count == 0 else f"{slug}-{count}")
    return anchors


def broken_links(doc: Path) -> list[str]:
    """One line per relative link of ``doc`` whose file or heading does not exist."""
    problems = []
    text = doc.read_text(encoding="utf-8")
    for target in LINK.findall(_prose(text)):
        if re.match(r"^[a-z][a-z0-9+.-]*:", target):  # http:, https:, mailto:
            continue
        path, _, anchor = target.partition("#")
        file = (doc.parent / path).resolve() if path else doc
        name = file.relative_to(REPO_ROOT).as_posix() if file.is_relative_to(REPO_ROOT) else ""
        if not file.exists():
            problems.append(f"{doc.name}: {target}: no file {name or file}")
            continue
        if anchor and file.suffix == ".md":
            if anchor not in heading_anchors(file.read_text(encoding="utf-8")):
                problems.append(f"{doc.name}: {target}: no heading #{anchor} in {name}")
    return problems


@pytest.mark.parametrize("doc", _documents(), ids=lambda p: p.relative_to(REPO_ROOT).as_posix())
def test_every_relative_link_leads_to_a_file_and_heading_that_exist(doc):
    assert broken_links(doc) == []


def test_the_link_check_finds_a_missing_file_and_a_missing_heading(tmp_path, monkeypatch):
    monkeypatch.setattr(sys.modules[__name__], "REPO_ROOT", tmp_path)
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "B.md").write_text("# Title\n## Two words (and more)\n")
    doc = tmp_path / "README.md"
    doc.write_text(
        "[ok](docs/B.md#two-words-and-more) [gone](docs/C.md) [bad](docs/B.md#three)\n"
        "![pic](docs/pic.png) [web](https://example.org/x) [self](#title-here)\n"
        "```\n[in code](nowhere.md)\n```\n# Title here\n"
    )
    assert broken_links(doc) == [
        "README.md: docs/C.md: no file docs/C.md",
        "README.md: docs/B.md#three: no heading #three in docs/B.md",
        "README.md: docs/pic.png: no file docs/pic.png",
    ]


# ---- the README -------------------------------------------------------------------------------


def test_the_readme_stays_short():
    assert len(README.read_text(encoding="utf-8").splitlines()) <= 250


def test_the_readme_command_list_parses_and_names_files_that_exist():
    """Each ``attnkit ...`` of the README's command table parses with the real command line,
    and a config file it trains exists."""
    from attnkit.cli import build_parser

    table = [line for line in README.read_text(encoding="utf-8").splitlines() if line[:1] == "|"]
    listed = [m for line in table for m in re.findall(r"`(attnkit [^`]+)`", line)]
    assert {command.split()[1] for command in listed} >= {
        "demo",
        "train",
        "translate",
        "evaluate",
        "plot",
        "explain",
        "serve",
    }
    for command in listed:
        args = build_parser().parse_args(shlex.split(command)[1:])
        if args.command == "train":
            assert (REPO_ROOT / args.config).is_file(), command


# ---- the results --------------------------------------------------------------------------------

NUMBER = re.compile(r"\d+(?:[.,]\d+)*")
RESULTS = REPO_ROOT / "docs" / "RESULTS.md"


def _section(text: str, heading: str) -> str:
    """The lines from the ``## heading`` line to the next ``## `` heading."""
    start = text.index(f"\n## {heading}") + 1
    end = text.find("\n## ", start + 3)
    return text[start : end if end >= 0 else len(text)]


def unmeasured_figures(summary: str, details: str) -> list[str]:
    """The figures of ``summary`` that ``details`` does not hold."""
    known = set(NUMBER.findall(details))
    return sorted({n for n in NUMBER.findall(summary) if n not in known})


def test_every_summary_figure_is_a_measured_one():
    """The README's results and RESULTS.md's summary tables quote the detailed sections, whose
    figures each stand under the command that printed them: no figure is in a summary alone."""
    results = RESULTS.read_text(encoding="utf-8")
    summary = _section(results, "Summary")
    details = results.replace(summary, "")
    assert unmeasured_figures(summary, details) == []
    readme = _section(README.read_text(encoding="utf-8"), "Results")
    assert unmeasured_figures(readme, details) == []


def test_the_figure_check_finds_a_figure_the_details_lack():
    assert unmeasured_figures("| 99.25% | 2.46x | 7.1 min |", "99.25 and 2.46x in 7.10") == ["7.1"]
