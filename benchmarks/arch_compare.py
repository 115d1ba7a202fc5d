#!/usr/bin/env python3
"""The RNN and the Transformer side by side: one task, the same machine, the same time budget.

    python benchmarks/arch_compare.py --rnn configs/numbers_bahdanau.yaml \
        --transformer configs/numbers_transformer.yaml --minutes 4
    python benchmarks/arch_compare.py --rnn configs/multi30k_de_en.yaml \
        --transformer configs/multi30k_de_en_transformer.yaml --minutes 10

Both are trained AT ONCE, one torch thread each, for the same ``train.max_minutes`` (so whatever
else the machine does slows both alike), by ``benchmarks/real_data.py`` (train, pick ``averaged``
or ``best`` by dev score, ``attnkit evaluate`` on the test split greedily and with beam 5). Prints
ONE JSON line: the budget, the machine, and per family the test metrics (greedy and beam),
updates, training tokens/s and parameters; ``--table`` also prints the Markdown rows of
docs/RESULTS.md's side-by-side table.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))  # machine_info beside this script
from machine_info import describe  # noqa: E402

HERE = Path(__file__).resolve().parent


def run_one(config: Path, minutes: float, runs: Path, extra: list[str], beam: int) -> dict:
    """``real_data.py`` for one config with the shared budget and one thread; its JSON."""
    cmd = [
        sys.executable,
        str(HERE / "real_data.py"),
        "--config",
        str(config),
        "--runs",
        str(runs),
        "--beam",
        str(beam),
        "--set",
        f"train.max_minutes={minutes}",
        "--set",
        "train.threads=1",
        *[x for s in extra for x in ("--set", s)],
    ]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        tail = (proc.stderr.strip().splitlines() or ["no output"])[-1]
        return {"error": f"real_data.py exited {proc.returncode}: {tail}", "command": cmd}
    return json.loads(proc.stdout.strip().splitlines()[-1])


def table_rows(result: dict, beam: int) -> list[str]:
    """Markdown rows: task | family | metric greedy | metric beam | updates | tokens/s."""
    rows = []
    for family in ("rnn", "transformer"):
        r = result[family]
        if "error" in r:
            rows.append(f"| {result['task']} | {family} | error: {r['error']} | | | |")
            continue
        greedy, beamed = r["greedy"], r.get(f"beam{beam}") or {}
        metrics = [k for k in greedy if k not in ("items", "decode_s", "inputs_per_s")]
        shown = ", ".join(f"{k} {greedy[k]}" for k in metrics)
        shown_beam = ", ".join(f"{k} {beamed.get(k)}" for k in metrics)
        rows.append(
            f"| {result['task']} | {family} | {shown} | {shown_beam} | {r.get('updates')} | "
            f"{r.get('train_tokens_per_s')} |"
        )
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--rnn", type=Path, required=True, help="the RNN experiment file")
    ap.add_argument("--transformer", type=Path, required=True, help="the Transformer's")
    ap.add_argument("--minutes", type=float, required=True, help="training budget of each")
    ap.add_argument("--runs", type=Path, default=Path("runs/arch_compare"), help="run directories")
    ap.add_argument("--beam", type=int, default=5)
    ap.add_argument(
        "--set", action="append", default=[], metavar="KEY=VALUE", help="applied to both configs"
    )
    ap.add_argument("--table", action="store_true", help="also print the Markdown table rows")
    args = ap.parse_args()
    for path in (args.rnn, args.transformer):
        if not path.is_file():
            sys.exit(f"arch_compare.py: {path}: no such experiment file")
    with ThreadPoolExecutor(2) as pool:
        futures = {
            family: pool.submit(run_one, config, args.minutes, args.runs, args.set, args.beam)
            for family, config in (("rnn", args.rnn), ("transformer", args.transformer))
        }
        results = {family: f.result() for family, f in futures.items()}
    task = next((r.get("task") for r in results.values() if r.get("task")), None)
    result = {
        "task": task,
        "minutes_each": args.minutes,
        "threads_each": 1,
        "configs": {"rnn": str(args.rnn), "transformer": str(args.transformer)},
        "machine": describe(),
        **results,
    }
    print(json.dumps(result))
    if args.table:
        print("\n".join(table_rows(result, args.beam)))


if __name__ == "__main__":
    main()
