"""Run the lessons of ``notebooks/`` as CI does (jupytext -> nbclient, a real kernel), time each,
and save one picture per lesson for ``notebooks/README.md``.

    python benchmarks/lessons.py                                # quick mode, every lesson
    python benchmarks/lessons.py --json docs/results/lessons_quick_cpu.json --pictures docs/images
    QUICK=0 python benchmarks/lessons.py --only 04              # full mode, one lesson
    python benchmarks/lessons.py --seeds 0 1 2 --json docs/results/lessons_seeds_cpu.json

Each lesson runs in its own scratch directory (what it trains lands there). Prints and writes
one JSON object: per lesson its wall seconds, the kernel's CPU seconds (``resource`` of the
kernel's children is not visible here, so the kernel reports its own), pass or the error, and
the machine. With ``--pictures`` the lesson's picture (:data:`PICTURES`: the n-th PNG it draws)
is written as ``lesson_NN.png``.

``--seeds`` runs every lesson once per seed (the environment variable ``SEED`` the lessons read,
:mod:`attnkit.lessons.mode`) and records, per lesson and seed, what each of its checks measured
beside its threshold (the ``check`` lines of :mod:`attnkit.lessons.checks`); the summary gives
each check's worst value over the seeds.
"""

from __future__ import annotations

import argparse
import base64
import json
import os
import platform
import tempfile
import time
from pathlib import Path

from attnkit.lessons.checks import parse_checks

REPO = Path(__file__).resolve().parents[1]
PICTURES = {
    "01": 1,
    "02": 1,
    "03": 0,
    "04": 0,
    "05": 0,
    "06": 5,
    "07": 0,
    "08": 0,
    "09": 1,
    "10": 2,
    "11": 2,
    "12": 2,
    "13": 0,
    "14": 3,
}
"""Lesson number -> which of its PNG outputs (0-based) stands for it on the front page."""
CPU_CELL = (
    "import resource as _r; _u = _r.getrusage(_r.RUSAGE_SELF); print(_u.ru_utime + _u.ru_stime)"
)


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", nargs="*", default=None, help="lesson numbers (01 02 ...)")
    parser.add_argument("--json", type=Path, default=None, help="also write the results here")
    parser.add_argument("--pictures", type=Path, default=None, help="write lesson_NN.png here")
    parser.add_argument("--keep", type=Path, default=None, help="write the executed .ipynb here")
    parser.add_argument(
        "--seeds", nargs="*", type=int, default=None, help="run each lesson under these SEEDs"
    )
    return parser.parse_args()


def cell_timeout() -> int:
    """Seconds one cell may run: 15 minutes in quick mode; in full mode an hour, since a cell may
    train shipped configs one after the other (lesson 9: two SST models of 14 minutes each)."""
    return 900 if os.environ.get("QUICK", "1") != "0" else 3600


def run_lesson(path: Path, scratch: Path) -> tuple[object, dict]:
    """(the executed notebook, its timing and outcome)."""
    import jupytext
    import nbclient
    import nbformat

    nb = jupytext.read(path)
    nb.cells.append(nbformat.v4.new_code_cell(CPU_CELL))
    cwd = scratch / path.stem
    cwd.mkdir(parents=True, exist_ok=True)
    start = time.perf_counter()
    outcome = {"lesson": path.name, "passed": True}
    try:
        client = nbclient.NotebookClient(nb, timeout=cell_timeout(), kernel_name="python3")
        client.execute(cwd=str(cwd))
    except nbclient.exceptions.CellExecutionError as exc:
        lines = [line for line in str(exc).splitlines() if line.strip()]
        failing = [line for line in lines if "assert" in line] or lines[-1:]
        outcome.update(passed=False, error=failing[-1].strip())
    outcome["wall_s"] = round(time.perf_counter() - start, 1)
    outcome["checks"] = parse_checks(
        "".join(o.get("text", "") for c in nb.cells for o in c.get("outputs", []))
    )
    last = nb.cells[-1].get("outputs", [])
    if last and last[0].get("text"):
        outcome["kernel_cpu_s"] = round(float(last[0]["text"].split()[-1]), 1)
    return nb, outcome


def save_picture(nb, number: str, directory: Path) -> str | None:
    pngs = [
        o["data"]["image/png"]
        for c in nb.cells
        for o in c.get("outputs", [])
        if "image/png" in o.get("data", {})
    ]
    index = PICTURES.get(number, 0)
    if index >= len(pngs):
        return None
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"lesson_{number}.png"
    path.write_bytes(base64.b64decode(pngs[index]))
    return str(path.relative_to(REPO)) if path.is_relative_to(REPO) else str(path)


def main() -> None:
    args = parse_args()
    os.environ.setdefault("QUICK", "1")
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    os.environ.pop("MPLBACKEND", None)  # the kernel's inline backend draws the figures
    shared = REPO.parent / "shared" / "data"  # as tests/conftest.py: the offline data sets
    if not os.environ.get("ATTNKIT_DATA_DIR", "").strip() and shared.is_dir():
        os.environ["ATTNKIT_DATA_DIR"] = str(shared)
    lessons = sorted((REPO / "notebooks").glob("[0-9][0-9]_*.py"))
    if args.only:
        lessons = [p for p in lessons if p.name[:2] in args.only]
    seeds = args.seeds if args.seeds else [None]
    results = {"quick": os.environ["QUICK"], "lessons": []}
    with tempfile.TemporaryDirectory(prefix="attnkit-lessons-") as scratch:
        for path in lessons:
            for seed in seeds:
                if seed is not None:
                    os.environ["SEED"] = str(seed)
                nb, outcome = run_lesson(path, Path(scratch))
                if seed is not None:
                    outcome["seed"] = seed
                if args.pictures:
                    outcome["picture"] = save_picture(nb, path.name[:2], args.pictures)
                if args.keep:
                    import nbformat

                    args.keep.mkdir(parents=True, exist_ok=True)
                    suffix = "" if seed is None else f"_seed{seed}"
                    nbformat.write(nb, args.keep / f"{path.stem}{suffix}.ipynb")
                results["lessons"].append(outcome)
                print(json.dumps(outcome), flush=True)
    results["total_wall_s"] = round(sum(r["wall_s"] for r in results["lessons"]), 1)
    if args.seeds:
        results["worst_over_seeds"] = worst_over_seeds(results["lessons"])
    results["machine"] = {"platform": platform.platform(), "cores": os.cpu_count()}
    text = json.dumps(results, indent=1)
    print(text)
    if args.json:
        args.json.write_text(text + "\n", encoding="utf-8")


def worst_over_seeds(outcomes: list[dict]) -> list[dict]:
    """Per lesson and check: its threshold, every seed's value and the worst of them (the one
    nearest to failing), and on how many seeds it held."""
    table: dict[tuple[str, str], dict] = {}
    for outcome in outcomes:
        for row in outcome.get("checks", []):
            key = (outcome["lesson"], row["check"])
            entry = table.setdefault(
                key,
                {
                    "lesson": outcome["lesson"],
                    "check": row["check"],
                    "op": row["op"],
                    "threshold": row["threshold"],
                    "values": {},
                    "held": 0,
                },
            )
            entry["values"][str(outcome.get("seed"))] = row["value"]
            entry["held"] += row["holds"]
    for entry in table.values():
        values = list(entry["values"].values())
        entry["worst"] = min(values) if entry["op"] in (">", ">=") else max(values)
    return list(table.values())


if __name__ == "__main__":
    main()
