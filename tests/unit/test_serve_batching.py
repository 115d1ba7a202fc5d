"""Micro-batching: requests that arrive together decode together, only with equal settings, and
each gets exactly the answer it would have got alone."""

from __future__ import annotations

import asyncio
import threading
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest
from fastapi.testclient import TestClient
from test_serve_app import numbers_model  # noqa: F401  (trained once per test run)

from attnkit.errors import RequestError
from attnkit.serve.app import ServeSettings, create_app
from attnkit.serve.batching import MicroBatcher


class Recorder:
    """A runner that records the batches it is given; payload "boom" fails alone."""

    def __init__(self):
        self.calls: list[tuple] = []
        self.gate = threading.Event()

    def __call__(self, key, payloads):
        self.gate.wait(5)
        self.calls.append((key, list(payloads)))
        return [ValueError("boom") if p == "boom" else (key, p) for p in payloads]


async def _submit_all(batcher, jobs, open_gate=None):
    tasks = [asyncio.create_task(batcher.submit(k, p, n, 5.0)) for k, p, n in jobs]
    await asyncio.sleep(0.05)  # all queued while the runner is held
    if open_gate is not None:
        open_gate.set()
    return await asyncio.gather(*tasks, return_exceptions=True)


def test_only_equal_keys_share_a_batch_within_max_batch():
    runner = Recorder()
    batcher = MicroBatcher(runner, max_batch=4, max_wait_s=0.2, queue_size=20)
    batcher.start()
    jobs = [("a", 1, 1), ("b", 2, 1), ("a", 3, 2), ("a", 4, 2), ("b", "boom", 1), ("a", 5, 9)]
    try:
        answers = asyncio.run(_submit_all(batcher, jobs, runner.gate))
    finally:
        batcher.stop()
    assert answers[:4] == [("a", 1), ("b", 2), ("a", 3), ("a", 4)]
    assert isinstance(answers[4], ValueError) and answers[5] == ("a", 5)
    for key, payloads in runner.calls:
        sizes = {p: n for k, p, n in jobs}
        assert all(k == key for k, p, _ in jobs if p in payloads)  # one key per batch
        assert sum(sizes[p] for p in payloads) <= 4 or len(payloads) == 1
    batched = sorted(len(payloads) for _, payloads in runner.calls)
    assert max(batched) >= 2  # some jobs did share a batch
    assert sum(batched) == len(jobs)


def test_no_batching_runs_each_job_alone():
    runner = Recorder()
    runner.gate.set()
    batcher = MicroBatcher(runner, max_batch=1, max_wait_s=0.0, queue_size=20)
    batcher.start()
    try:
        asyncio.run(_submit_all(batcher, [("a", i, 1) for i in range(5)]))
    finally:
        batcher.stop()
    assert [len(payloads) for _, payloads in runner.calls] == [1] * 5


def test_a_full_queue_and_a_timeout_are_api_errors():
    runner = Recorder()  # held: nothing decodes
    batcher = MicroBatcher(runner, max_batch=1, max_wait_s=0.0, queue_size=1)

    async def scenario():
        first = asyncio.create_task(batcher.submit("a", 1, 1, 0.3))
        await asyncio.sleep(0.01)
        with pytest.raises(RequestError) as full:
            await batcher.submit("a", 2, 1, 0.3)
        with pytest.raises(RequestError) as late:
            await first
        return full.value.status, late.value.status

    assert asyncio.run(scenario()) == (503, 504)  # the worker is not even started


@pytest.mark.parametrize("beam", [1, 3])
def test_concurrent_requests_batched_equal_their_answers_alone(numbers_model, beam):  # noqa: F811
    bodies = [
        {"inputs": [text], "beam": beam, "n_best": beam}
        for text in ("dreiundzwanzig", "vier", "siebenundachtzig", "zwölf", "neunzig", "elf")
    ]
    bodies.append({"inputs": ["achtzehn", "einunddreißig"], "beam": beam, "top_k": 3})
    alone_app = create_app(ServeSettings(models=[numbers_model], max_batch=1, max_wait_ms=0))
    with TestClient(alone_app) as c:
        alone = [c.post("/v1/translate", json=b).json() for b in bodies]
    batched_app = create_app(ServeSettings(models=[numbers_model], max_wait_ms=300))
    with TestClient(batched_app) as c, ThreadPoolExecutor(len(bodies)) as pool:
        answers = [
            f.result() for f in [pool.submit(c.post, "/v1/translate", json=b) for b in bodies]
        ]
        stats = batched_app.state.batcher.stats
    assert all(a.status_code == 200 for a in answers)
    assert stats.batches < len(bodies) and stats.largest > 1  # they did decode together
    for a, b in zip(answers, alone):
        _same(a.json(), b)


def _same(got: dict, want: dict) -> None:
    """Equal tokens; scores and weights equal up to float rounding (batches pad)."""
    assert got["model"] == want["model"]
    for r, w in zip(got["results"], want["results"], strict=True):
        assert r["source_tokens"] == w["source_tokens"]
        for h, v in zip(r["hypotheses"], w["hypotheses"], strict=True):
            assert h["tokens"] == v["tokens"]
            assert h["score"] == pytest.approx(v["score"], abs=1e-4)
            np.testing.assert_allclose(h["attention"], v["attention"], atol=1e-4)
            assert [[o["token"] for o in s] for s in h["top_k"]] == [
                [o["token"] for o in s] for s in v["top_k"]
            ]
