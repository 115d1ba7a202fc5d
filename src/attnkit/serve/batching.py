"""Micro-batching: requests that arrive close together decode as one batch, in one thread.

:meth:`MicroBatcher.submit` (on the event loop) puts a :class:`Job` on a bounded queue and
awaits its answer; one worker thread (torch is not asyncio-friendly, and one thread keeps its
matmuls from fighting over the cores) takes the first waiting job, keeps collecting for
``max_wait`` seconds (or until ``max_batch`` inputs of that job's kind wait), groups what it
collected by :attr:`Job.key` (only requests whose decoding settings are all equal may share a
batch), and hands each group to the ``run`` function, which returns one answer per job: a
result, or the exception that job alone raised. ``max_batch`` 1 with ``max_wait`` 0 decodes
each request on its own.
"""

from __future__ import annotations

import asyncio
import queue
import threading
import time
from collections.abc import Callable, Hashable
from dataclasses import dataclass, field

from attnkit.errors import RequestError

#: run(key, payloads) -> one result (or exception) per payload, in order
Runner = Callable[[Hashable, list], list]


@dataclass
class Job:
    key: Hashable  # jobs decode together only when their keys are equal
    payload: object
    size: int  # inputs it holds, counted against max_batch
    loop: asyncio.AbstractEventLoop
    future: asyncio.Future
    deadline: float  # time.monotonic() after which nobody waits for it
    queued: float = field(default_factory=time.monotonic)


@dataclass
class BatchStats:
    """What the worker did, for tests and benchmarks."""

    batches: int = 0
    jobs: int = 0
    largest: int = 0  # most inputs decoded in one call


_STOP = object()


class MicroBatcher:
    def __init__(self, run: Runner, max_batch: int, max_wait_s: float, queue_size: int):
        if max_batch < 1 or max_wait_s < 0 or queue_size < 1:
            raise ValueError("need max_batch >= 1, max_wait_s >= 0, queue_size >= 1")
        self.run, self.max_batch, self.max_wait_s = run, max_batch, max_wait_s
        self._queue: queue.Queue = queue.Queue(maxsize=queue_size)
        self._thread: threading.Thread | None = None
        self.stats = BatchStats()

    # ---- event loop side ----------------------------------------------------------------------
    def start(self) -> None:
        self._thread = threading.Thread(target=self._work, name="attnkit-decoder", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        """Decode what is queued, then end the worker (the server has stopped taking requests)."""
        if self._thread is not None:
            self._queue.put(_STOP)
            self._thread.join()
            self._thread = None

    async def submit(self, key: Hashable, payload, size: int, timeout_s: float):
        """The answer to ``payload``; RequestError 503 when the queue is full, 504 after
        ``timeout_s`` seconds of waiting and decoding."""
        loop = asyncio.get_running_loop()
        job = Job(key, payload, size, loop, loop.create_future(), time.monotonic() + timeout_s)
        try:
            self._queue.put_nowait(job)
        except queue.Full:
            raise RequestError(
                503, None, f"the server is busy: {self._queue.maxsize} requests wait (--queue-size)"
            ) from None
        try:
            return await asyncio.wait_for(job.future, timeout_s)
        except asyncio.TimeoutError:
            raise RequestError(
                504, None, f"decoding took longer than {timeout_s:g} s (--decode-seconds)"
            ) from None

    # ---- worker thread ------------------------------------------------------------------------
    def _work(self) -> None:
        carry: list = []  # jobs taken from the queue for the next round
        while True:
            first = carry.pop(0) if carry else self._queue.get()
            if first is _STOP:
                return
            jobs, carry, stopping = self._collect(first, carry)
            for group in self._groups(jobs):
                self._run_group(group)
            if stopping:
                carry.append(_STOP)

    def _collect(self, first: Job, carry: list) -> tuple[list[Job], list, bool]:
        """``first`` and the jobs that come within max_wait of it: (jobs, left over, stop seen)."""
        jobs, waiting = [first], first.size
        end = time.monotonic() + self.max_wait_s
        while waiting < self.max_batch:
            if carry:
                job = carry.pop(0)
            else:
                try:
                    remaining = end - time.monotonic()
                    job = self._queue.get(timeout=remaining) if remaining > 0 else None
                    job = job or self._queue.get_nowait()
                except queue.Empty:
                    break
            if job is _STOP:
                return jobs, carry, True
            jobs.append(job)
            if job.key == first.key:
                waiting += job.size
        return jobs, carry, False

    def _groups(self, jobs: list[Job]) -> list[list[Job]]:
        """Jobs of equal keys in chunks of at most max_batch inputs (a bigger job: alone),
        first come first served."""
        by_key: dict[Hashable, list[list[Job]]] = {}
        for job in jobs:
            chunks = by_key.setdefault(job.key, [[]])
            if chunks[-1] and sum(j.size for j in chunks[-1]) + job.size > self.max_batch:
                chunks.append([])
            chunks[-1].append(job)
        return [chunk for chunks in by_key.values() for chunk in chunks]

    def _run_group(self, group: list[Job]) -> None:
        now = time.monotonic()
        live = [j for j in group if not j.future.cancelled() and j.deadline > now]
        if not live:
            return
        try:
            answers = self.run(live[0].key, [j.payload for j in live])
        except Exception as exc:  # the runner answers per job; this is a bug: every job hears
            answers = [exc] * len(live)
        self.stats.batches += 1
        self.stats.jobs += len(live)
        self.stats.largest = max(self.stats.largest, sum(j.size for j in live))
        for job, answer in zip(live, answers):
            job.loop.call_soon_threadsafe(_settle, job.future, answer)


def _settle(future: asyncio.Future, answer) -> None:
    """Give a job its answer (on its event loop), unless nobody waits for it any more."""
    if future.done():
        return
    if isinstance(answer, BaseException):
        future.set_exception(answer)
    else:
        future.set_result(answer)
