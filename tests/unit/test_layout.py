"""The shape of the source tree: import floors, no package cycles, every module has its tests,
and no module, class or function outgrows the size limits.

Floors, bottom up (:data:`FLOOR_UNITS`, by name; at most eight); a module imports only from its
own floor or below:

    core        errors, config, device, renamed_keys, size_caps
    data        data, zoo
    attention   attention
    models      models, accel, decoding, checkpoint (the file format), train_config (the
                train: keys, each family's defaults being its own: families/<name>/config.py)
    training and inference   training, evaluation, explain, viz
    families    one folder per family, and the registry (docs/FAMILIES.md)
    api         api, lessons, the package itself (attnkit/__init__.py: the public API)
    serve and cli   serve, cli, demo, __main__

Within a floor packages may import each other, but never round a cycle: on the training and
inference floor the order is viz < training < explain < evaluation (evaluation's reports draw
explanations). Every ``import`` statement counts, at the top of a module or inside
a function.

A module ``src/attnkit/<package>/<module>.py`` is tested in ``test_<module>.py`` anywhere under
``tests/``, or in the test modules that ``tests/MODULES.md`` names for it.

Sizes keep headroom under the guide (modules <= 500 lines): a module at most 450 lines, a
function 80, a class 300.
"""

from __future__ import annotations

import ast
import itertools
import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SRC = REPO / "src" / "attnkit"
TESTS = REPO / "tests"
MAP = TESTS / "MODULES.md"

MAX_MODULE_LINES = 450
MAX_FUNCTION_LINES = 80
MAX_CLASS_LINES = 300
#: modules exempt from the size check (none: keep it so)
SIZE_EXEMPT: tuple[str, ...] = ()

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


def _size_exempt(path: Path) -> bool:
    relative = path.relative_to(SRC).as_posix()
    return any(relative == e or (e.endswith("/") and relative.startswith(e)) for e in SIZE_EXEMPT)


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
    found = [
        item
        for path in sorted(SRC.rglob("*.py"))
        if not _size_exempt(path)
        for item in oversized(path)
    ]
    assert not found, "over the size limits:\n" + "\n".join(found)


# ---- import floors and package cycles ---------------------------------------------------------
#: the floors, bottom up, by name (DESIGN's picture): each a list of units, a unit being a
#: subpackage of attnkit or a module at its top level
FLOOR_UNITS: dict[str, tuple[str, ...]] = {
    "core": ("errors", "config", "device", "renamed_keys", "size_caps"),
    "data": ("data", "zoo"),
    "attention": ("attention",),
    "models": (
        "models",
        "accel",
        "decoding",
        "checkpoint",
        "train_config",
    ),  # fmt: skip
    "training and inference": ("training", "evaluation", "explain", "viz"),
    "families": ("families",),
    "api": ("api", "lessons", "__init__"),
    "serve and cli": ("serve", "cli", "demo", "__main__"),
}
#: unit -> its floor's number
FLOORS = {unit: i for i, units in enumerate(FLOOR_UNITS.values()) for unit in units}
MAX_FLOORS = 8  # from the core up to serve and cli


def test_the_house_has_at_most_eight_floors_and_each_unit_one():
    units = [unit for units in FLOOR_UNITS.values() for unit in units]
    assert len(units) == len(set(units)), "a unit stands on two floors"
    assert len(FLOOR_UNITS) <= MAX_FLOORS, list(FLOOR_UNITS)


#: upward imports waiting for a move, each (importing module, imported unit); delete an entry when
#: its import is gone (test_pending_entries_still_exist says which). None are left.
PENDING: set[tuple[str, str]] = set()


def _modules() -> dict[str, Path]:
    """Dotted name -> file, for every module of the package."""
    found = {}
    for path in sorted(SRC.rglob("*.py")):
        parts = list(path.relative_to(SRC.parent).with_suffix("").parts)
        if parts[-1] == "__init__" and len(parts) > 1:
            parts = parts[:-1]
        found[".".join(parts)] = path
    return found


MODULES = _modules()


def _unit(name: str) -> str:
    """The unit a dotted name belongs to (``attnkit`` alone is the package's ``__init__``)."""
    parts = name.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def _imported(name: str, path: Path) -> set[str]:
    """Every attnkit module ``name`` imports, anywhere in the file."""
    is_package = path.name == "__init__.py"
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                here = name.split(".") if is_package else name.split(".")[:-1]
                here = here[: len(here) - node.level + 1]
                base = ".".join(here + ([node.module] if node.module else []))
            # ``from attnkit.x import y``: y is a module of x, or a name defined in x
            for alias in node.names:
                full = f"{base}.{alias.name}"
                found.add(full if full in MODULES else base)
    return {m for m in found if m == "attnkit" or m.startswith("attnkit.")}


IMPORTS = {name: _imported(name, path) for name, path in MODULES.items()}


def test_every_unit_has_a_floor():
    missing = sorted({_unit(name) for name in MODULES} - FLOORS.keys())
    assert not missing, (
        f"{missing}: give each a floor in FLOORS of tests/unit/test_layout.py (and DESIGN.md)"
    )


def test_no_module_imports_from_a_floor_above():
    upward = []
    for name, imported in IMPORTS.items():
        unit = _unit(name)
        for target in sorted(imported):
            other = _unit(target)
            if FLOORS.get(other, -1) > FLOORS.get(unit, 99) and (name, other) not in PENDING:
                below, above = (list(FLOOR_UNITS)[FLOORS[u]] for u in (unit, other))
                upward.append(f"{name} (floor {below}) imports {target} (floor {above})")
    assert not upward, "imports from a floor above:\n" + "\n".join(upward)


def test_pending_entries_still_exist():
    gone = [
        entry
        for entry in sorted(PENDING)
        if not any(_unit(t) == entry[1] for t in IMPORTS.get(entry[0], ()))
    ]
    assert not gone, f"these imports are gone: delete them from PENDING: {gone}"


def _unit_graph() -> dict[str, set[str]]:
    graph: dict[str, set[str]] = {}
    for name, imported in IMPORTS.items():
        unit = _unit(name)
        graph.setdefault(unit, set()).update(
            _unit(t) for t in imported if _unit(t) not in (unit, "__init__")
        )
    return graph


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected groups of more than one unit (Tarjan)."""
    index, low, stack, on_stack, groups = {}, {}, [], set(), []
    counter = itertools.count()

    def visit(v: str) -> None:
        index[v] = low[v] = next(counter)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                group.append(w)
                if w == v:
                    break
            if len(group) > 1:
                groups.append(sorted(group))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return groups


def test_no_cycle_between_packages():
    cycles = _cycles(_unit_graph())
    assert not cycles, f"packages that import each other (directly or round a loop): {cycles}"


def test_cycle_finder_finds_a_cycle():
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert _cycles({"a": {"b"}, "b": set()}) == []


def test_imports_inside_functions_and_relative_ones_count(tmp_path):
    path = tmp_path / "m.py"
    path.write_text(
        "from attnkit import __version__\n"
        "from . import metrics\n"
        "def f():\n"
        "    from attnkit.viz import visual\n"
        "    import attnkit.errors\n",
        encoding="utf-8",
    )
    assert _imported("attnkit.evaluation.m", path) == {
        "attnkit",
        "attnkit.evaluation.metrics",
        "attnkit.viz.visual",
        "attnkit.errors",
    }


# ---- one home per family ------------------------------------------------------------------------
FAMILIES_DIR = SRC / "families"
#: the families, as the registry's folders name them
FAMILY_NAMES = sorted(
    p.name for p in FAMILIES_DIR.iterdir() if p.is_dir() and (p / "__init__.py").is_file()
)
#: modules outside families/ that still name a family, each waiting for a move into its family
#: (or for the generic mechanism that makes the name unnecessary); delete an entry when its module
#: no longer names one (test_pending_family_names_still_exist says which). None are left.
PENDING_FAMILY_NAMES: dict[str, str] = {}


def _names_a_family(node: ast.AST) -> str | None:
    """The family a node names, where it is about families: ``family == "x"``, ``family = "x"``,
    ``{"family": "x"}``, ``family="x"``, a mapping with two or more families as keys, or an
    import of a family's module."""

    def family_constant(value) -> str | None:
        is_name = isinstance(value, ast.Constant) and value.value in FAMILY_NAMES
        return value.value if is_name else None

    def about_family(target) -> bool:  # family, families, or a constant named after one
        text = ast.unparse(target).lower()
        return "famil" in text or any(n in re.split(r"\W+", text) for n in FAMILY_NAMES)

    if isinstance(node, ast.ImportFrom | ast.Import):
        modules = [node.module or ""] if isinstance(node, ast.ImportFrom) else []
        modules += [a.name for a in node.names] if isinstance(node, ast.Import) else []
        for module in modules:
            parts = module.split(".")
            if parts[:2] == ["attnkit", "families"] and len(parts) > 2 and parts[2] in FAMILY_NAMES:
                return parts[2]
    if isinstance(node, ast.Compare) and about_family(node.left):
        for right in node.comparators:
            items = right.elts if isinstance(right, ast.Tuple | ast.List | ast.Set) else [right]
            for item in items:
                if found := family_constant(item):
                    return found
    if isinstance(node, ast.Assign | ast.AnnAssign) and node.value is not None:
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        if any(about_family(t) for t in targets):
            for item in ast.walk(node.value):
                if found := family_constant(item):
                    return found
    if isinstance(node, ast.keyword) and node.arg and "famil" in node.arg:
        return family_constant(node.value)
    if isinstance(node, ast.Dict):
        for key, value in zip(node.keys, node.values):
            if isinstance(key, ast.Constant) and key.value == "family":
                if found := family_constant(value):
                    return found
        keys = [family_constant(k) for k in node.keys if k is not None]
        if sum(k is not None for k in keys) >= 2:
            return next(k for k in keys if k)
    return None


def _family_names_outside() -> dict[str, list[str]]:
    """Module -> 'line: family' for every place outside families/ that names a family (the
    registry, ``families/__init__.py``, aside)."""
    found: dict[str, list[str]] = {}
    for name, path in MODULES.items():
        if name == "attnkit.families" or name.startswith("attnkit.families."):
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if family := _names_a_family(node):
                found.setdefault(name, []).append(f"{node.lineno}: {family}")
    return found


def test_no_module_outside_families_names_a_family():
    named = {m: lines for m, lines in _family_names_outside().items()}
    new = {m: lines for m, lines in named.items() if m not in PENDING_FAMILY_NAMES}
    assert not new, (
        "a family is named outside families/ (give the generic layer a registry lookup, or move "
        f"the code into the family's folder): {new}"
    )


def test_pending_family_names_still_exist():
    gone = sorted(set(PENDING_FAMILY_NAMES) - set(_family_names_outside()))
    assert not gone, f"these modules name no family now: delete them from PENDING: {gone}"


def test_no_family_imports_another():
    crossing = []
    for name, imported in IMPORTS.items():
        parts = name.split(".")
        if parts[:2] != ["attnkit", "families"] or len(parts) < 3 or parts[2] not in FAMILY_NAMES:
            continue
        for target in imported:
            other = target.split(".")
            if other[:2] == ["attnkit", "families"] and len(other) > 2 and other[2] != parts[2]:
                if other[2] in FAMILY_NAMES:
                    crossing.append(f"{name} imports {target}")
    assert not crossing, "a family imports another:\n" + "\n".join(crossing)


def test_the_family_finder_finds_each_way_of_naming_one(tmp_path):
    source = (
        'if family == "graph": pass\n'
        'FAMILY = "text"\n'
        'MEMNET = "memnet"\n'
        'meta = {"family": "memnet"}\n'
        'load(family="pointer")\n'
        'TABLE = {"seq2seq": 1, "vision": 2}\n'
        "from attnkit.families.graph import model\n"
        'x = {"text": 1}\n'  # one key alone: a word, not a list of families
        'if kind == "graph": pass\n'  # not about families
    )
    nodes = ast.walk(ast.parse(source))
    found = sorted(f for node in nodes if (f := _names_a_family(node)))
    assert found == ["graph", "graph", "memnet", "memnet", "pointer", "seq2seq", "text"]


def test_inference_imports_nothing_of_training():
    inference = ("api", "evaluation", "explain", "serve")
    found = [
        f"{name} imports {target}"
        for name, imported in IMPORTS.items()
        if _unit(name) in inference
        for target in imported
        if _unit(target) == "training"
    ]
    assert not found, "inference code imports training/:\n" + "\n".join(found)
