"""How fast a training update could run on this machine if it did nothing but its matmuls.

Used by ``speed.py --matmul-ceiling``. A training update of the reference model is a fixed set of
matmuls (the recurrences force per-step ones of at most a batch of rows; the weight gradients are
large ones) and everything else: gate and attention arithmetic, softmax, dropout masks, copies, the
optimizer, Python. This module records every matmul that one real update dispatches (``mm``,
``addmm``, ``bmm``, ``baddbmm`` and their ``out=`` and in-place forms, forward and backward), with
the shapes and strides of its operands, then replays exactly those calls on fresh tensors of the
same layouts, back to back, with nothing in between. The replay's time is a floor under any
implementation that computes these matmuls with torch's BLAS on this machine, so its tokens/s is a
ceiling on the training speed of this model here.

Each batch is timed three ways in turn, so a noisy machine slows all alike: a real update, then (in
a second update of the same batch, recorded) the list of its matmuls, then the replay of that list
(median of ``repeats``). The model keeps training on the batches.
"""

from __future__ import annotations

import statistics
import time

import torch
from torch.utils._python_dispatch import TorchDispatchMode

_aten = torch.ops.aten
MATMULS = {
    _aten.mm,
    _aten.addmm,
    _aten.addmm_,
    _aten.bmm,
    _aten.baddbmm,
    _aten.baddbmm_,
    _aten.addbmm,
    _aten.mv,
    _aten.addmv,
    _aten.dot,
}


class MatmulRecorder(TorchDispatchMode):
    """Lets every op run; notes each matmul as (op, args, kwargs) with every tensor replaced by its
    (shape, stride, dtype, device)."""

    def __init__(self):
        super().__init__()
        self.calls: list = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if func.overloadpacket in MATMULS:
            self.calls.append(
                (func, [_layout(a) for a in args], {k: _layout(v) for k, v in kwargs.items()})
            )
        return func(*args, **kwargs)


class _Layout(tuple):
    """(shape, stride, dtype, device) of a recorded tensor operand."""


def _layout(x):
    if isinstance(x, torch.Tensor):
        return _Layout((tuple(x.shape), tuple(x.stride()), x.dtype, x.device))
    return x


def _materialise(x):
    """A tensor of the recorded layout (random values; expanded and overlapping strides kept), or x
    itself."""
    if not isinstance(x, _Layout):
        return x
    shape, stride, dtype, device = x
    if 0 in shape:
        return torch.empty(shape, dtype=dtype, device=device)
    storage = 1 + sum((n - 1) * s for n, s in zip(shape, stride))
    return torch.randn(storage, dtype=dtype, device=device).as_strided(shape, stride)


def replay_seconds(calls: list, repeats: int, sync) -> float:
    """Median time of running ``calls`` back to back on fresh tensors of their layouts."""
    ready = [
        (func, [_materialise(a) for a in args], {k: _materialise(v) for k, v in kw.items()})
        for func, args, kw in calls
    ]
    times = []
    for _ in range(repeats + 1):  # the first run warms the caches and is not counted
        sync()
        t = time.perf_counter()
        for func, args, kw in ready:
            func(*args, **kw)
        sync()
        times.append(time.perf_counter() - t)
    return statistics.median(times[1:])


def matmul_ceiling(batches: list, update, sync, repeats: int = 3) -> dict:
    """For each batch: a timed real update (``update(batch)`` -> target tokens), a recorded one, the
    replay of its matmuls. Returns tokens/s of the real updates and of the matmul-only replays, and
    their ratio."""
    real_s = replay_s = 0.0
    tokens = calls = 0
    for batch in batches:
        sync()
        t = time.perf_counter()
        tokens += update(batch)
        sync()
        real_s += time.perf_counter() - t
        with MatmulRecorder() as recorder:
            update(batch)
        calls += len(recorder.calls)
        replay_s += replay_seconds(recorder.calls, repeats, sync)
    return {
        "batches": len(batches),
        "matmul_calls_per_update": round(calls / len(batches), 1),
        "real_tokens_per_s": round(tokens / real_s, 1),
        "matmul_only_tokens_per_s": round(tokens / replay_s, 1),
        "matmul_share_of_real_time": round(replay_s / real_s, 3),
    }
