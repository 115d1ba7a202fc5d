"""The documents a user reads hold together: the README's test command is what CI runs, every
relative link of the docs leads to a file (and heading) that exists, the README stays short and
its command list parses with the real command line."""

import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from repo_scripts import load_script

REPO_ROOT = Path(__file__).resolve().parents[2]
README = REPO_ROOT / "README.md"
CI = REPO_ROOT / ".ci" / "run"


def _readme_commands():
    return load_script("benchmarks/readme_commands.py")


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
    assert readme_steps[-1] == "python -m pytest -q -n 2"
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
    docs += sorted((REPO_ROOT / "docs" / "results").glob("*.md"))
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


def test_the_readme_notebook_command_leaves_nothing_for_git_to_track():
    """The README's ``jupytext --to notebook notebooks/*.py`` writes ``notebooks/NN.ipynb`` beside
    each lesson; git ignores every one of them."""
    command = "jupytext --to notebook notebooks/*.py"
    assert command in README.read_text(encoding="utf-8")
    if shutil.which("git") is None or not (REPO_ROOT / ".git").exists():
        pytest.skip("not a git checkout")
    written = [f"notebooks/{p.stem}.ipynb" for p in sorted((REPO_ROOT / "notebooks").glob("*.py"))]
    done = subprocess.run(
        ["git", "check-ignore", "--no-index", *written],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
    )
    assert sorted(done.stdout.split()) == written


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


# ---- text spliced in twice ----------------------------------------------------------------------

MIN_PROSE_LINE = 60  # characters: shorter lines ("See above.") may well stand twice
MIN_RUN_WORDS = 8  # words: a run this long said twice in one paragraph is a splice
INLINE_CODE = re.compile(r"`[^`]*`")


def _splice_documents() -> list[Path]:
    docs = [README, *sorted((REPO_ROOT / "docs").glob("*.md"))]
    docs += sorted((REPO_ROOT / "docs" / "results").glob("*.md"))
    extra = [REPO_ROOT / "notebooks" / "README.md", REPO_ROOT / "CHANGELOG.md"]
    return docs + [p for p in extra if p.exists()]


def _blocks(text: str) -> list[tuple[str, list[tuple[int, str]]]]:
    """The text as blocks of consecutive non-blank lines outside fenced code, each
    ``("table", rows)`` or ``("prose", lines)`` with (line number, stripped line) pairs."""
    blocks: list[tuple[str, list[tuple[int, str]]]] = []
    fenced = False
    for number, line in enumerate(text.splitlines(), 1):
        if FENCE.match(line):
            fenced = not fenced
            kind = None
        else:
            stripped = line.strip()
            kind = None if fenced or not stripped else "table" if stripped[0] == "|" else "prose"
        if kind is None:
            continue
        if blocks and blocks[-1][0] == kind and blocks[-1][1][-1][0] == number - 1:
            blocks[-1][1].append((number, line.strip()))
        else:
            blocks.append((kind, [(number, line.strip())]))
    return blocks


def _first_repeated_run(words: list[str], size: int) -> str | None:
    """The first run of ``size`` words that ``words`` holds twice (overlapping allowed), or None."""
    seen = set()
    for i in range(len(words) - size + 1):
        run = tuple(words[i : i + size])
        if run in seen:
            return " ".join(run)
        seen.add(run)
    return None


def splices(path: Path) -> list[str]:
    """One ``FILE:LINE: ...`` line for each table row standing twice in one table, each prose line
    (``MIN_PROSE_LINE`` characters or more, not a heading) standing twice in the file, and each
    paragraph that says a run of ``MIN_RUN_WORDS`` words twice (inline code aside). Fenced code is
    not looked at."""
    name = path.relative_to(REPO_ROOT).as_posix() if path.is_relative_to(REPO_ROOT) else str(path)
    problems: list[str] = []
    first_seen: dict[str, int] = {}
    for kind, lines in _blocks(path.read_text(encoding="utf-8")):
        if kind == "table":
            rows: dict[str, int] = {}
            for number, row in lines:
                if set(row) <= set("|-: "):  # the header's separator row
                    continue
                if row in rows:
                    problems.append(
                        f"{name}:{number}: table row already at line {rows[row]}: {row[:80]}"
                    )
                rows.setdefault(row, number)
            continue
        for number, line in lines:
            if len(line) < MIN_PROSE_LINE or line.startswith("#"):
                continue
            if line in first_seen:
                problems.append(
                    f"{name}:{number}: line already at line {first_seen[line]}: {line[:80]}"
                )
            first_seen.setdefault(line, number)
        prose = INLINE_CODE.sub(" ", " ".join(line for _, line in lines))  # a command may recur
        words = [word for word in prose.split() if re.search(r"\w", word)]
        run = _first_repeated_run(words, MIN_RUN_WORDS)
        if run is not None:
            problems.append(f"{name}:{lines[0][0]}: paragraph says twice: {run!r}")
    return problems


@pytest.mark.parametrize(
    "doc", _splice_documents(), ids=lambda p: p.relative_to(REPO_ROOT).as_posix()
)
def test_no_text_stands_twice(doc):
    assert splices(doc) == []


def test_the_splice_check_finds_each_kind_of_repeat(tmp_path):
    line = "A prose line long enough to count, sixty characters or more in all."
    doc = tmp_path / "spliced.md"
    doc.write_text(
        "# Title\n\n"
        "| a | b |\n|---|---|\n| 1 | 2 |\n| 3 | 4 |\n| 1 | 2 |\n\n"
        f"{line}\n\n"
        "```\n"
        f"{line}\n"  # in code: not counted
        "```\n\n"
        f"Another paragraph.\n{line}\n\n"
        "the model looks back at the source while it writes each word, and\n"
        "the model looks back at the source while it writes each word again.\n"
    )
    assert splices(doc) == [
        f"{doc}:7: table row already at line 5: | 1 | 2 |",
        f"{doc}:16: line already at line 9: {line}",
        f"{doc}:18: paragraph says twice: 'the model looks back at the source while'",
    ]


def test_the_splice_check_passes_clean_text(tmp_path):
    doc = tmp_path / "clean.md"
    doc.write_text(
        "# Results\n\n## Numbers\n\n| task | score |\n|---|---|\n| numbers | 99% |\n\n"
        # the same row again, in another table
        "## Dates\n\n| task | score |\n|---|---|\n| numbers | 99% |\n\n"
        "Short line.\n\nShort line.\n\n"
        "```\nthe same code line, long enough to count if it were prose text\n"
        "the same code line, long enough to count if it were prose text\n```\n\n"
        "Seven words said twice are allowed here: seven words said twice are allowed.\n"
    )
    assert splices(doc) == []


def test_the_conventions_behind_published_comparisons_are_said():
    """The bAbI targets are labelled as the MATLAB reference code's, and its selection rule said;
    the Hansards AER says which rule its figures used."""
    results = (REPO_ROOT / "docs" / "RESULTS.md").read_text(encoding="utf-8")
    readme = README.read_text(encoding="utf-8")
    babi = results[results.index("## Memory networks on bAbI") :]
    assert "| MATLAB reference code |" in babi
    assert "not the paper's Table 1" in babi and "chosen by validation error" in babi
    assert "(the MATLAB reference code: 13.8% / 11)" in readme and "by validation error" in readme
    assert "the paper: 13.8%" not in readme and "as the paper takes it" not in results
    hansards = results[results.index("English->French on an H200") :]
    assert 'rule="gold_linked"' in hansards[: hansards.index("## Visual attention")]
