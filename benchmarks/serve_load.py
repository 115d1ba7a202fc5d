"""Load on ``attnkit serve``: N concurrent clients, a bounded number of requests, every answer
checked; micro-batching on or off.

    python benchmarks/serve_load.py --model runs/demo/model/best                # 16 clients, 2000
    python benchmarks/serve_load.py --model runs/demo/model/best --no-batching  # the comparison
    python benchmarks/serve_load.py --model runs/demo/model/best --smoke        # a few requests
    python benchmarks/serve_load.py --model runs/demo/model/best --healthz      # the ceiling

``--healthz`` sends ``GET /healthz`` instead, which decodes nothing: its requests/s is what the
HTTP stack and these clients alone allow on the machine (they share its cores with the server),
the ceiling of any translate figure.

The server is the real one (``python -m attnkit serve`` in a subprocess, on a free loopback
port); the clients are ``httpx.AsyncClient`` tasks on one event loop, each sending one input per
request (``POST /v1/translate``, the API's defaults but ``--beam``) as soon as its previous one
is answered. Inputs are the sources of the checkpoint's test split (or the lines of
``--inputs FILE``), cycled. An answer is correct when it is a 200 whose result is the input sent,
with one hypothesis whose attention has a row per output token and a column per source token,
and whose output equals every other answer for the same input (batching must not change
outputs). Prints ONE JSON line: requests, concurrency, seconds, requests_per_s, p50/p95/p99_ms
(latency of the correct answers), errors (non-200s and failed connections), lost (sent minus
answered correctly), beam, batching, model, machine.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "src"))
sys.path.insert(0, str(REPO / "benchmarks"))

from machine_info import describe  # noqa: E402

STARTUP_S = 120
SMOKE = {"requests": 24, "clients": 4}


def test_inputs(model_dir: Path, path: Path | None, limit: int) -> list[str]:
    """Sources to send: the lines of ``path``, or the checkpoint's test split."""
    if path is not None:
        lines = [line.strip() for line in path.read_text(encoding="utf-8").splitlines()]
        return [line for line in lines if line][:limit]
    from attnkit.checkpoint import read_config
    from attnkit.data.tasks.registry import build_split
    from attnkit.families.seq2seq.config import experiment_from_dict

    cfg = experiment_from_dict(read_config(model_dir), source=str(model_dir / "config.yaml"))
    return [src for src, _ in build_split(cfg.data, "test")][:limit]


def start_server(args) -> tuple[subprocess.Popen, str]:
    """The server process and its URL (from the line it prints once it listens)."""
    batching = ["--no-batching"] if args.no_batching else []
    command = [sys.executable, "-m", "attnkit", "serve", "--model", str(args.model), "--port", "0"]
    command += ["--max-batch", str(args.max_batch), "--max-wait-ms", str(args.max_wait_ms)]
    command += ["--queue-size", str(max(256, 4 * args.clients)), *batching]
    env = dict(os.environ, PYTHONUNBUFFERED="1", PYTHONPATH=str(REPO / "src"))
    proc = subprocess.Popen(command, stdout=subprocess.PIPE, text=True, env=env)
    line = proc.stdout.readline()  # blocks until it listens, or dies
    match = re.match(r"attnkit serve: (\S+) ", line)
    if not match:
        proc.kill()
        raise SystemExit(f"serve_load: the server did not start: {line!r}")
    return proc, match.group(1)


class Tally:
    """Answers seen so far: latencies of the correct ones, errors, the output per input."""

    def __init__(self):
        self.latencies: list[float] = []
        self.errors = 0
        self.wrong = 0
        self.outputs: dict[str, str] = {}

    def check_health(self, response: httpx.Response, seconds: float) -> None:
        if response.status_code == 200 and response.json() == {"status": "ok"}:
            self.latencies.append(seconds)
        else:
            self.errors += 1

    def check(self, text: str, response: httpx.Response, seconds: float) -> None:
        if response.status_code != 200:
            self.errors += 1
            return
        (result,) = response.json()["results"]
        (hyp,) = result["hypotheses"]
        rows, cols = len(hyp["attention"]), len(hyp["attention"][0]) if hyp["attention"] else 0
        same = self.outputs.setdefault(text, hyp["output"]) == hyp["output"]
        shaped = rows == len(hyp["tokens"]) and cols == len(result["source_tokens"])
        if result["input"] == text and shaped and same:
            self.latencies.append(seconds)
        else:
            self.wrong += 1


async def run_clients(url: str, texts: list[str], args) -> tuple[Tally, float]:
    tally, counter = Tally(), iter(range(args.requests))

    async def client(http: httpx.AsyncClient):
        for n in counter:
            text = texts[n % len(texts)]
            start = time.perf_counter()
            try:
                if args.healthz:
                    response = await http.get("healthz")
                else:
                    response = await http.post(
                        "v1/translate", json={"inputs": [text], "beam": args.beam}
                    )
            except httpx.HTTPError:
                tally.errors += 1
                continue
            if args.healthz:
                tally.check_health(response, time.perf_counter() - start)
            else:
                tally.check(text, response, time.perf_counter() - start)

    limits = httpx.Limits(max_connections=args.clients)
    async with httpx.AsyncClient(base_url=url, timeout=60, limits=limits) as http:
        began = time.perf_counter()
        await asyncio.gather(*(client(http) for _ in range(args.clients)))
        return tally, time.perf_counter() - began


def percentile(values: list[float], q: float) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    return round(1000 * ordered[min(len(ordered) - 1, int(q / 100 * len(ordered)))], 2)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--model", type=Path, required=True, help="seq2seq checkpoint directory")
    p.add_argument("--clients", type=int, default=16, help="concurrent clients (default 16)")
    p.add_argument("--requests", type=int, default=2000, help="requests in all (default 2000)")
    p.add_argument("--beam", type=int, default=1, help="beam size of every request (default 1)")
    p.add_argument("--no-batching", action="store_true", help="serve with --no-batching")
    p.add_argument("--max-batch", type=int, default=32, help="the server's --max-batch")
    p.add_argument("--max-wait-ms", type=float, default=5.0, help="the server's --max-wait-ms")
    p.add_argument("--inputs", type=Path, default=None, help="inputs, one per line")
    p.add_argument("--smoke", action="store_true", help="a few requests, to check it runs")
    p.add_argument(
        "--healthz",
        action="store_true",
        help="GET /healthz instead of translating: the HTTP stack's and clients' ceiling",
    )
    args = p.parse_args(argv)
    if args.smoke:
        args.requests, args.clients = SMOKE["requests"], SMOKE["clients"]
    texts = test_inputs(args.model, args.inputs, limit=5000)
    if not texts:
        raise SystemExit("serve_load: no inputs")
    proc, url = start_server(args)
    try:
        tally, seconds = asyncio.run(run_clients(url, texts, args))
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=60)
    answered = len(tally.latencies)
    report = {
        "requests": args.requests,
        "concurrency": args.clients,
        "seconds": round(seconds, 3),
        "requests_per_s": round(answered / seconds, 2) if seconds > 0 else None,
        "p50_ms": percentile(tally.latencies, 50),
        "p95_ms": percentile(tally.latencies, 95),
        "p99_ms": percentile(tally.latencies, 99),
        "errors": tally.errors,
        "lost": args.requests - answered,
        "beam": args.beam,
        "endpoint": "/healthz" if args.healthz else "/v1/translate",
        "batching": {
            "enabled": not args.no_batching,
            "max_batch": 1 if args.no_batching else args.max_batch,
            "max_wait_ms": 0.0 if args.no_batching else args.max_wait_ms,
        },
        "model": str(args.model),
        "machine": describe(),
    }
    print(json.dumps(report))
    return 0 if report["lost"] == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
