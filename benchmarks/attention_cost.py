"""What attention costs: time and peak memory against length for every implementation of
``attnkit.attention.IMPLEMENTATIONS``, fitted log-log slopes, and the machine's own limits
measured in the same run. Prints JSON (or writes it with ``--json``).

    python benchmarks/attention_cost.py                                  # 128 .. 16,384, CPU
    python benchmarks/attention_cost.py --lengths 128 256 512 --repeats 1 --plot cost.png
    python benchmarks/attention_cost.py --device cuda --dtype bfloat16 --lengths 1024 65536

Each point (implementation, length n) is self-attention of q, k, v (batch, heads, n, dim) drawn
from N(0, 1), no mask (``--causal``: the causal one): the forward alone (under ``no_grad``, as
in inference) and the forward plus the backward of a sum over the output, each timed ``repeats``
times after one warm-up call (the median is reported).

**Memory, honestly.** Each point runs in a fresh subprocess, so that no point inherits another's
allocator caches. On CUDA the peak is ``torch.cuda.max_memory_allocated`` above what the inputs
hold. On a CPU it is the growth of the process's peak resident set size: after the inputs are
made the kernel's peak counter is reset (``/proc/self/clear_refs``, Linux), the call runs, and
the peak (``VmHWM``) minus the resident size before the call is reported (one call on 8
positions first sets up the kernels' lazy state, which the peak should not count). That counts
everything the process touched (tensors, kernels' workspaces, allocator slack, pages of 4 KiB),
not only tensors; small points sit near the resolution of the allocator (a few MiB), so the
memory slope is read from the long lengths. Where the counter cannot be reset (not Linux),
``memory_method`` says so and the CPU figures are null.

A point whose estimated memory (:func:`estimate_bytes`: the implementation's own largest tensors
for forward and backward, counted before anything is allocated) exceeds ``--cap-gib`` is not run;
it is listed with ``skipped`` and the reason.

**The machine's limit.** Before the points, in the same process and thread count: the float32
FLOP/s of one square matmul (``--matmul-size``, best of ``repeats``), and the bytes/s of copying
one tensor (``--copy-mib``; read + write counted). Each point gives its FLOP/s (its useful FLOPs,
:func:`attention_flops`: 4 B H n m Dh for the forward, m the keys a query attends (n, the window,
or the feature count of the kernelized ones), the backward counted as twice the forward, the
convention of the FlashAttention papers' recomputation-free count) and bytes/s (q, k, v read and
the output written once: the least any implementation moves), each as a fraction of the measured
limit.

``slopes``: per implementation, the least-squares slope of log(value) on log(n) over the points it
ran (time ~ n^slope, memory ~ n^slope): explicit's memory should be near 2, chunked's, local's and
linear's near 1. ``--plot FILE`` draws time and memory against length on log-log axes, with the
time explicit's FLOPs would take at the matmul limit and the memory cap drawn as lines.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "src"))

import torch  # noqa: E402

from attnkit.attention import IMPLEMENTATIONS, ImplOptions, build_implementation  # noqa: E402

LENGTHS = [128 * 2**i for i in range(8)]  # 128 .. 16,384
METRICS = ("forward_s", "forward_backward_s", "forward_bytes", "forward_backward_bytes")


def parse_args(argv=None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--impls", nargs="+", default=list(IMPLEMENTATIONS), choices=IMPLEMENTATIONS)
    p.add_argument("--lengths", nargs="+", type=int, default=LENGTHS)
    p.add_argument("--batch", type=int, default=1)
    p.add_argument("--heads", type=int, default=4)
    p.add_argument("--dim", type=int, default=64, help="width per head (Dh)")
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--causal", action="store_true")
    p.add_argument("--device", default="cpu")
    p.add_argument("--dtype", default="float32", choices=("float32", "bfloat16", "float16"))
    p.add_argument("--cap-gib", type=float, default=4.0, help="skip points estimated above it")
    p.add_argument("--window", type=int, default=64, help="local: half width")
    p.add_argument("--features", type=int, default=64, help="performer: random features")
    p.add_argument("--chunk", type=int, default=128, help="chunked: keys per tile")
    p.add_argument("--matmul-size", type=int, default=1024)
    p.add_argument("--copy-mib", type=int, default=256)
    p.add_argument("--json", type=Path, help="write the JSON here (default: stdout)")
    p.add_argument("--plot", type=Path, help="draw time and memory against length here")
    p.add_argument("--point", nargs=2, metavar=("IMPL", "N"), help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    bad = [n for n in args.lengths if n < 1] + [x for x in (args.batch, args.heads) if x < 1]
    if bad or args.dim < 1 or args.repeats < 1 or args.threads < 1:
        p.error("lengths, batch, heads, dim, repeats and threads must be at least 1")
    return args


def keys_attended(impl: str, n: int, args) -> int:
    """m: the keys one query's weights span (the window, or the features of a kernel)."""
    if impl == "local":
        return min(n, 2 * args.window + 1)
    if impl == "linear":
        return args.dim  # elu + 1 keeps Dh features
    if impl == "performer":
        return args.features
    return n


def attention_flops(impl: str, n: int, args) -> tuple[float, float]:
    """Useful FLOPs of (forward, forward + backward): 4 B H n m Dh, the backward twice that."""
    forward = 4.0 * args.batch * args.heads * n * keys_attended(impl, n, args) * args.dim
    return forward, 3.0 * forward


def estimate_bytes(impl: str, n: int, args) -> int:
    """The memory a forward + backward needs at least, before anything is allocated: q, k, v,
    the output and their gradients, plus the implementation's largest intermediates (the
    (n, n) scores, weights and their gradient for explicit; one tile per row for the others)."""
    size = torch.empty(0, dtype=getattr(torch, args.dtype)).element_size()
    rows = args.batch * args.heads * n
    linear = 8 * rows * args.dim
    wide = {
        "explicit": 5 * n,
        "sdpa": 4 * args.dim,
        "chunked": 4 * min(args.chunk, n),
        "local": 4 * min(n, 3 * args.window + 1),
        "linear": 4 * min(64, n) + 2 * args.dim,
        "performer": 4 * min(64, n) + 4 * args.features,
    }[impl]
    return size * (linear + rows * wide)


def machine_limits(args, device) -> dict:
    """Peak float32 matmul FLOP/s and copy bandwidth here, best of ``repeats``."""
    m = args.matmul_size
    a, b = (torch.randn(m, m, device=device) for _ in range(2))
    matmul = _best(lambda: a @ b, args.repeats, device)
    src = torch.empty(args.copy_mib * 2**20 // 4, device=device)
    dst = torch.empty_like(src)
    copy = _best(lambda: dst.copy_(src), args.repeats, device)
    return {
        "matmul_flops": 2.0 * m**3 / matmul,
        "matmul_size": m,
        "copy_bytes_per_s": 2.0 * src.numel() * 4 / copy,
        "copy_bytes": src.numel() * 4,
    }


def _sync(device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def _best(fn, repeats: int, device) -> float:
    fn()
    times = []
    for _ in range(repeats):
        _sync(device)
        start = time.perf_counter()
        fn()
        _sync(device)
        times.append(time.perf_counter() - start)
    return min(times)


def _median(fn, repeats: int, device) -> float:
    fn()  # warm-up
    times = []
    for _ in range(repeats):
        _sync(device)
        start = time.perf_counter()
        fn()
        _sync(device)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def _status_kib(field: str) -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    raise OSError(f"no {field} in /proc/self/status")


def _peak_growth(fn, device) -> int | None:
    """Bytes the call needed above what was held before it (see the module docstring)."""
    if device.type == "cuda":
        torch.cuda.synchronize(device)
        before = torch.cuda.memory_allocated(device)
        torch.cuda.reset_peak_memory_stats(device)
        fn()
        torch.cuda.synchronize(device)
        return torch.cuda.max_memory_allocated(device) - before
    try:
        before = _status_kib("VmRSS")
        Path("/proc/self/clear_refs").write_text("5")  # the peak counter starts again here
        fn()
        return (_status_kib("VmHWM") - before) * 1024
    except OSError:
        return None


def run_point(impl_name: str, n: int, args) -> dict:
    """One point, in this (fresh) process: memory first, then the timings."""
    torch.set_num_threads(args.threads)
    device = torch.device(args.device)
    options = ImplOptions(args.window, 0, args.features, 0, args.chunk, strict=False)
    impl = build_implementation(impl_name, args.dim, options).to(device)
    g = torch.Generator(device=device).manual_seed(n)
    shape = (args.batch, args.heads, n, args.dim)
    dtype = getattr(torch, args.dtype)
    q, k, v = (torch.randn(shape, generator=g, device=device, dtype=dtype) for _ in range(3))
    leaves = [x.clone().requires_grad_() for x in (q, k, v)]

    def forward():
        with torch.no_grad():
            impl(q, k, v, causal=args.causal)

    def forward_backward():
        impl(*leaves, causal=args.causal).sum().backward()
        for x in leaves:
            x.grad = None

    tiny = [x[..., :8, :].detach().clone().requires_grad_() for x in (q, k, v)]
    impl(*tiny, causal=args.causal).sum().backward()  # lazy kernel set-up, outside the peaks
    point = {"forward_bytes": _peak_growth(forward, device)}
    point["forward_backward_bytes"] = _peak_growth(forward_backward, device)
    point["forward_s"] = _median(forward, args.repeats, device)
    point["forward_backward_s"] = _median(forward_backward, args.repeats, device)
    return point


def measure(impl: str, n: int, args) -> dict:
    """Run one point in a fresh subprocess; its JSON line."""
    env = {**os.environ, "OMP_NUM_THREADS": str(args.threads), "PYTHONPATH": str(REPO / "src")}
    forwarded = [
        *("--batch", str(args.batch), "--heads", str(args.heads), "--dim", str(args.dim)),
        *("--threads", str(args.threads), "--repeats", str(args.repeats)),
        *("--device", args.device, "--dtype", args.dtype, "--window", str(args.window)),
        *("--features", str(args.features), "--chunk", str(args.chunk)),
        *(["--causal"] if args.causal else []),
    ]
    command = [sys.executable, __file__, "--point", impl, str(n), *forwarded]
    done = subprocess.run(command, capture_output=True, text=True, env=env, check=False)
    if done.returncode:
        lines = (done.stderr.strip() or "no output").splitlines()
        return {"skipped": f"failed: {lines[-1]}"}
    return json.loads(done.stdout.strip().splitlines()[-1])


def slope(points: list[dict], metric: str) -> float | None:
    """Least-squares slope of log(metric) on log(length) over the points that have it."""
    pairs = [
        (math.log(p["length"]), math.log(p[metric]))
        for p in points
        if p.get(metric) is not None and p[metric] > 0
    ]
    if len(pairs) < 2 or len({x for x, _ in pairs}) < 2:
        return None
    mx = sum(x for x, _ in pairs) / len(pairs)
    my = sum(y for _, y in pairs) / len(pairs)
    num = sum((x - mx) * (y - my) for x, y in pairs)
    return num / sum((x - mx) ** 2 for x, _ in pairs)


def with_fractions(point: dict, impl: str, args, limits: dict) -> dict:
    """The point's FLOP/s and bytes/s, and their fractions of the machine's limits."""
    flops = dict(zip(("forward", "forward_backward"), attention_flops(impl, point["length"], args)))
    moved = 4 * args.batch * args.heads * point["length"] * args.dim
    moved *= torch.empty(0, dtype=getattr(torch, args.dtype)).element_size()
    for part, work in flops.items():
        seconds = point[f"{part}_s"]
        point[f"{part}_flops"] = work / seconds
        point[f"{part}_flops_fraction"] = work / seconds / limits["matmul_flops"]
        point[f"{part}_bytes_fraction"] = moved / seconds / limits["copy_bytes_per_s"]
    return point


def run(args) -> dict:
    sys.path.insert(0, str(REPO / "benchmarks"))
    from machine_info import describe

    torch.set_num_threads(args.threads)
    device = torch.device(args.device)
    limits = machine_limits(args, device)
    cap = int(args.cap_gib * 2**30)
    points = []
    for impl in args.impls:
        for n in args.lengths:
            point = {"impl": impl, "length": n, "estimated_bytes": estimate_bytes(impl, n, args)}
            if point["estimated_bytes"] > cap:
                point["skipped"] = (
                    f"estimated {point['estimated_bytes'] / 2**30:.1f} GiB > cap "
                    f"{args.cap_gib:g} GiB (--cap-gib)"
                )
            else:
                point.update(measure(impl, n, args))
                if "skipped" not in point:
                    point = with_fractions(point, impl, args, limits)
            points.append(point)
            print(f"{impl} n={n}: {point.get('skipped', 'done')}", file=sys.stderr)
    return summarise(points, args, limits, describe())


def summarise(points: list[dict], args, limits: dict, machine: dict) -> dict:
    ran = {
        impl: [p for p in points if p["impl"] == impl and "skipped" not in p] for impl in args.impls
    }
    on_linux = Path("/proc/self/clear_refs").exists()
    method = (
        "torch.cuda.max_memory_allocated above the inputs"
        if args.device != "cpu"
        else (
            "peak RSS growth (VmHWM after /proc/self/clear_refs) in a fresh subprocess per point"
            if on_linux
            else "unavailable (no /proc/self/clear_refs): CPU memory is null"
        )
    )
    settings = {k: getattr(args, k) for k in ("lengths", "batch", "heads", "dim", "threads")}
    settings.update(
        repeats=args.repeats,
        causal=args.causal,
        device=args.device,
        dtype=args.dtype,
        cap_bytes=int(args.cap_gib * 2**30),
        window=args.window,
        features=args.features,
        chunk=args.chunk,
    )
    return {
        "machine": {**machine, **limits},
        "settings": settings,
        "memory_method": method,
        "points": points,
        "slopes": {impl: {m: slope(ran[impl], m) for m in METRICS} for impl in args.impls},
        "best_fraction": {
            impl: {
                part: max((p[f"{part}_flops_fraction"] for p in ran[impl]), default=None)
                for part in ("forward", "forward_backward")
            }
            for impl in args.impls
        },
    }


def plot(result: dict, path: Path) -> None:
    """Time and memory (forward + backward) against length, log-log, one line per
    implementation; the matmul limit's time for explicit's FLOPs and the cap as grey lines."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4.5))
    for impl, slopes in result["slopes"].items():
        ran = [p for p in result["points"] if p["impl"] == impl and "skipped" not in p]
        lengths = [p["length"] for p in ran]
        for axis, metric in ((left, "forward_backward_s"), (right, "forward_backward_bytes")):
            values = [p[metric] for p in ran]
            if any(v is None or v <= 0 for v in values) or not values:
                continue
            label = impl if slopes[metric] is None else f"{impl} (slope {slopes[metric]:.2f})"
            axis.plot(lengths, values, marker="o", label=label)
    lengths = result["settings"]["lengths"]
    s = result["settings"]
    floor = [
        12.0 * s["batch"] * s["heads"] * n * n * s["dim"] / result["machine"]["matmul_flops"]
        for n in lengths
    ]
    left.plot(
        lengths, floor, color="grey", linestyle=":", label="explicit's FLOPs at the matmul limit"
    )
    memory = [p.get("forward_backward_bytes") or 0 for p in result["points"]]
    if s["cap_bytes"] < 100 * max(memory, default=0):  # drawn where it does not flatten the rest
        right.axhline(s["cap_bytes"], color="grey", linestyle=":", label="cap (--cap-gib)")
    for axis, title in ((left, "forward + backward time (s)"), (right, "peak memory (bytes)")):
        axis.set_xscale("log", base=2)
        axis.set_yscale("log")
        axis.set_xlabel("length n")
        axis.set_title(title)
        axis.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def main(argv=None) -> int:
    args = parse_args(argv)
    if args.point:
        print(json.dumps(run_point(args.point[0], int(args.point[1]), args)))
        return 0
    result = run(args)
    text = json.dumps(result, indent=1)
    if args.json:
        args.json.write_text(text + "\n", encoding="utf-8")
    else:
        print(text)
    if args.plot:
        plot(result, args.plot)
    return 0


if __name__ == "__main__":
    sys.exit(main())
