#!/usr/bin/env python3
"""Does fusing a GRU step's elementwise arithmetic pay on this machine? Prints ONE JSON line.

    python benchmarks/cell_kernels.py                  # the encoder's shape: 2 directions x 256
                                                       # rows x 256 units
    python benchmarks/cell_kernels.py --rows 128 --directions 1

Times one GRU step's gate arithmetic (r, z = sigmoid(.), n = tanh(x_n + r h_n), h' = (1 - z) n + z
h) on given input and hidden gates, three ways:

* ``eager``: plain torch expressions, each allocating its result;
* ``cell_math``: :func:`attnkit.accel.cell_math.cell_forward`, the handwritten-backward loops'
  kernels writing into preallocated buffers;
* ``compiled``: the eager function through ``torch.compile`` (one fused loop per step, generated C++
  on a CPU); its compile time is reported separately and left out of the step time.

Also times the step's two matmuls (input and hidden gates) at the same sizes, for scale, and reports
the largest difference of the compiled result from ``cell_math`` as a check that all compute one
function.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time

import torch

from attnkit.accel.cell_math import cell_forward


def gru_gates(gates_x: torch.Tensor, gates_h: torch.Tensor, h: torch.Tensor) -> torch.Tensor:
    """(..., 3H), (..., 3H), (..., H) -> the new state (..., H), as nn.GRU computes it."""
    hidden = h.size(-1)
    r = torch.sigmoid(gates_x[..., :hidden] + gates_h[..., :hidden])
    z = torch.sigmoid(gates_x[..., hidden : 2 * hidden] + gates_h[..., hidden : 2 * hidden])
    n = torch.tanh(gates_x[..., 2 * hidden :] + r * gates_h[..., 2 * hidden :])
    return n + z * (h - n)


def median_us(fn, repeats: int) -> float:
    for _ in range(3):
        fn()
    times = []
    for _ in range(repeats):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return round(statistics.median(times) * 1e6, 1)


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--rows", type=int, default=256, help="batch rows")
    ap.add_argument("--hidden", type=int, default=256, help="units per direction")
    ap.add_argument("--inputs", type=int, default=128, help="input width (for the matmul timing)")
    ap.add_argument("--directions", type=int, default=2)
    ap.add_argument("--repeats", type=int, default=200)
    ap.add_argument("--threads", type=int, default=0, help="torch CPU threads (0 = default)")
    args = ap.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    d, b, h = args.directions, args.rows, args.hidden
    gates_x, gates_h, state = (
        torch.randn(d, b, 3 * h),
        torch.randn(d, b, 3 * h),
        torch.randn(d, b, h),
    )
    x, w_ih, w_hh = (
        torch.randn(d, b, args.inputs),
        torch.randn(d, args.inputs, 3 * h),
        torch.randn(d, h, 3 * h),
    )
    gates, out = torch.empty(d, b, 3 * h), torch.empty(d, b, h)

    with torch.inference_mode():
        t = time.perf_counter()
        compiled = torch.compile(gru_gates, dynamic=True)
        fused = compiled(gates_x, gates_h, state)
        compile_s = time.perf_counter() - t
        cell_forward(False, gates_x, gates_h, state, None, gates, None, out, None)
        result = {
            "shape": [d, b, h],
            "threads": torch.get_num_threads(),
            "repeats": args.repeats,
            "eager_us": median_us(lambda: gru_gates(gates_x, gates_h, state), args.repeats),
            "cell_math_us": median_us(
                lambda: cell_forward(False, gates_x, gates_h, state, None, gates, None, out, None),
                args.repeats,
            ),
            "compiled_us": median_us(lambda: compiled(gates_x, gates_h, state), args.repeats),
            "compile_s": round(compile_s, 1),
            "matmuls_us": median_us(
                lambda: (torch.bmm(x, w_ih), torch.bmm(state, w_hh)), args.repeats
            ),
            "max_abs_diff_compiled_vs_cell_math": float((fused - out).abs().max()),
        }
    print(json.dumps(result))


if __name__ == "__main__":
    main()
