"""The shape of the source tree: every module has its tests, and no module, class or function
outgrows the size limits.

A module ``src/attnkit/<package>/<module>.py`` is tested in ``test_<module>.py`` anywhere under
``tests/``, or in the test modules that ``tests/MODULES.md`` names for it.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SRC = REPO / "src" / "attnkit"
TESTS = REPO / "tests"
MAP = TESTS / "MODULES.md"

MAX_MODULE_LINES = 500
MAX_FUNCTION_LINES = 80
MAX_CLASS_LINES = 300

#: a table row: | `src/attnkit/...py` | `tests/...py`, `tests/...py` |
_ROW = re.compile(r"^\|\s*`(?P<module>[^`]+)`\s*\|(?P<tests>.*)\|\s*$")


def _relative(path: Path) -> str:
    """``path`` from the repository root (as the map writes it), else as it is."""
    return path.relative_to(REPO).as_posix() if path.is_relative_to(REPO) else str(path)


def _defines_something(path: Path) -> bool:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    kinds = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
    return any(isinstance(node, kinds) for node in tree.body)


def source_modules() -> dict[str, str]:
    """Each module under src/attnkit -> the name its test module takes (``test_<name>.py``).

    A package's ``__init__.py`` (or ``__main__.py``) counts only when it defines a function
    or class; it is then named after its package.
    """
    modules = {}
    for path in sorted(SRC.rglob("*.py")):
        if path.name in ("__init__.py", "__main__.py"):
            if _defines_something(path):
                modules[_relative(path)] = path.parent.name
        else:
            modules[_relative(path)] = path.stem
    return modules


def read_map(path: Path = MAP) -> dict[str, list[str]]:
    """The table of ``tests/MODULES.md``: module path -> the test module paths that cover it."""
    table: dict[str, list[str]] = {}
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.startswith("|") or set(line) <= set("|-: ") or line.startswith("| module "):
            continue  # prose, the separator row, the header row
        row = _ROW.match(line)
        tests = re.findall(r"`([^`]+)`", row["tests"]) if row else []
        if not tests:
            raise AssertionError(f"{_relative(path)}:{number}: not a '| `module` | `tests` |' row")
        if row["module"] in table:
            raise AssertionError(f"{_relative(path)}:{number}: {row['module']} is listed twice")
        table[row["module"]] = tests
    return table


def test_every_module_has_a_test_module_or_a_row_in_the_map():
    test_names = {path.name for path in TESTS.rglob("test_*.py")}
    mapped = read_map()
    untested = [
        f"{module} (no test_{name}.py)"
        for module, name in source_modules().items()
        if f"test_{name}.py" not in test_names and module not in mapped
    ]
    assert not untested, (
        f"add a test module, or a row in {_relative(MAP)} naming the tests that cover: "
        + "; ".join(untested)
    )


def test_the_map_names_only_modules_and_test_files_that_exist():
    modules = source_modules()
    wrong = []
    for module, tests in read_map().items():
        if module not in modules:
            wrong.append(f"{module}: no such module")
        for test in tests:
            path = REPO / test
            if not (test.startswith("tests/") and path.name.startswith("test_")):
                wrong.append(f"{module}: {test} is not a test module under tests/")
            elif not path.is_file():
                wrong.append(f"{module}: {test} does not exist")
    assert not wrong, f"{_relative(MAP)}: " + "; ".join(wrong)


def test_the_map_reader_rejects_a_malformed_row(tmp_path):
    good = "| module | tested in |\n|---|---|\n| `src/attnkit/a.py` | `tests/unit/test_b.py` |\n"
    (tmp_path / "ok.md").write_text("# title\n\nprose\n\n" + good, encoding="utf-8")
    assert read_map(tmp_path / "ok.md") == {"src/attnkit/a.py": ["tests/unit/test_b.py"]}
    for bad in ("| `src/attnkit/a.py` | |\n", "| src/attnkit/a.py | tests/unit/test_b.py |\n"):
        (tmp_path / "bad.md").write_text(good + bad, encoding="utf-8")
        with pytest.raises(AssertionError, match=r"bad\.md:4: not a"):
            read_map(tmp_path / "bad.md")
    (tmp_path / "twice.md").write_text(good + good.splitlines()[-1] + "\n", encoding="utf-8")
    with pytest.raises(AssertionError, match="listed twice"):
        read_map(tmp_path / "twice.md")


def oversized(path: Path) -> list[str]:
    """Every limit ``path`` breaks: the module's lines, each function's and each class's
    (``end_lineno - lineno + 1``, methods and nested functions included)."""
    text = path.read_text(encoding="utf-8")
    where = _relative(path)
    found = []
    lines = len(text.splitlines())
    if lines > MAX_MODULE_LINES:
        found.append(f"{where}: {lines} lines (module limit {MAX_MODULE_LINES})")
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            kind, limit = "function", MAX_FUNCTION_LINES
        elif isinstance(node, ast.ClassDef):
            kind, limit = "class", MAX_CLASS_LINES
        else:
            continue
        size = node.end_lineno - node.lineno + 1
        if size > limit:
            found.append(
                f"{where}:{node.lineno}: {kind} {node.name} has {size} lines (limit {limit})"
            )
    return found


def test_the_size_check_finds_each_kind_of_offender(tmp_path):
    def block(header: str, lines: int) -> str:  # a definition of ``lines`` lines in all
        return header + "\n" + "".join(f"    x{i} = {i}\n" for i in range(lines - 1))

    path = tmp_path / "big.py"
    fits = block("def short():", MAX_FUNCTION_LINES) + block("class Small:", MAX_CLASS_LINES)
    path.write_text(fits, encoding="utf-8")
    assert oversized(path) == []
    too_long = block("def long():", MAX_FUNCTION_LINES + 1) + block(
        "class Big:", MAX_CLASS_LINES + 1
    )
    filler = "# -\n" * (MAX_MODULE_LINES - (MAX_FUNCTION_LINES + MAX_CLASS_LINES + 2) + 1)
    path.write_text(too_long + filler, encoding="utf-8")
    assert oversized(path) == [
        f"{path}: {MAX_MODULE_LINES + 1} lines (module limit {MAX_MODULE_LINES})",
        f"{path}:1: function long has {MAX_FUNCTION_LINES + 1} lines (limit {MAX_FUNCTION_LINES})",
        f"{path}:{MAX_FUNCTION_LINES + 2}: class Big has {MAX_CLASS_LINES + 1} lines "
        f"(limit {MAX_CLASS_LINES})",
    ]


def test_no_module_class_or_function_outgrows_the_limits():
    found = [item for path in sorted(SRC.rglob("*.py")) for item in oversized(path)]
    assert not found, "over the size limits:\n" + "\n".join(found)
