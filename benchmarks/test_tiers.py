"""Choose the quick test tier from a measured run: write ``tests/slow_tests.txt``.

Run the whole suite once with a JUnit report (``python -m pytest -q --durations=50
--junitxml=full.xml``), then ``python benchmarks/test_tiers.py full.xml --budget 180 --scale S``:
the slowest tests are listed as slow until the rest take at most ``--budget`` seconds, the
durations being divided by ``--scale`` first (how much slower the measuring machine was than the
one the budget is for: 1 when it was that machine, idle). Every test file keeps its fastest test
in the quick tier, so every module stays covered. Tests already marked slow in their files count
for nothing. Prints one JSON line: the measured total, the quick tier's estimate, the tests listed.
"""

from __future__ import annotations

import argparse
import json
import sys
import xml.etree.ElementTree as ET
from collections import defaultdict
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "tests" / "slow_tests.txt"


def node_id(classname: str, name: str) -> str:
    """A JUnit test case's pytest node id (``tests.unit.test_x.TestY`` + ``test_z[a]`` ->
    ``tests/unit/test_x.py::TestY::test_z[a]``)."""
    parts = classname.split(".")
    for cut in range(len(parts), 0, -1):
        path = Path(*parts[:cut]).with_suffix(".py")
        if (ROOT / path).is_file():
            return "::".join([path.as_posix(), *parts[cut:], name])
    return f"{classname}::{name}"


def durations(report: Path) -> dict[str, float]:
    """Seconds of each test that ran (setup, call and teardown), by node id."""
    found = {}
    for case in ET.parse(report).getroot().iter("testcase"):
        if case.find("skipped") is not None:
            continue
        found[node_id(case.get("classname", ""), case.get("name", ""))] = float(case.get("time", 0))
    return found


def marked_slow() -> set[str]:
    """The node ids already marked slow in their files (collected, not run)."""

    class Collect:
        ids: set[str] = set()

        def pytest_collection_modifyitems(self, items):
            self.ids = {i.nodeid for i in items if i.get_closest_marker("slow")}

    plugin = Collect()
    saved = OUT.read_text(encoding="utf-8") if OUT.exists() else None
    OUT.unlink(missing_ok=True)  # the files' own marks alone
    try:
        pytest.main(
            ["--collect-only", "-q", "-p", "no:cacheprovider", str(ROOT / "tests")],
            plugins=[plugin],
        )
    finally:
        if saved is not None:
            OUT.write_text(saved, encoding="utf-8")
    return plugin.ids


def choose(times: dict[str, float], budget: float) -> list[str]:
    """The slowest tests until the others fit ``budget``; each file keeps its fastest one."""
    by_file = defaultdict(list)
    for nid, t in times.items():
        by_file[nid.split("::")[0]].append((t, nid))
    keep = {min(tests)[1] for tests in by_file.values()}
    total = sum(times.values())
    listed = []
    for t, nid in sorted(((t, n) for n, t in times.items()), reverse=True):
        if total <= budget:
            break
        if nid in keep:
            continue
        listed.append(nid)
        total -= t
    return sorted(listed)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("report", type=Path, help="JUnit XML of a run of the whole suite")
    parser.add_argument("--budget", type=float, default=180.0, help="seconds for the quick tier")
    parser.add_argument("--scale", type=float, default=1.0, help="measured / target machine speed")
    args = parser.parse_args(argv)
    measured = durations(args.report)
    slow = marked_slow()
    times = {n: t / args.scale for n, t in measured.items() if n not in slow}
    listed = choose(times, args.budget)
    header = (
        f"# written by benchmarks/test_tiers.py from a measured run (--budget {args.budget:g} "
        f'--scale {args.scale:g}): the tests `pytest -m "not slow"` leaves out\n'
    )
    OUT.write_text(header + "".join(f"{n}\n" for n in listed), encoding="utf-8")
    quick = sum(t for n, t in times.items() if n not in listed)
    print(
        json.dumps(
            {
                "measured_total_s": round(sum(measured.values()), 1),
                "marked_slow_in_files": len(slow),
                "listed": len(listed),
                "quick_tests": len(times) - len(listed),
                "quick_estimate_s": round(quick, 1),
            }
        )
    )


if __name__ == "__main__":
    sys.exit(main())
