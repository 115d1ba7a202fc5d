#!/usr/bin/env python3
"""Additive attention energies: the compiled kernel against torch. Prints ONE JSON line.

    python benchmarks/attention_kernel.py                       # a greedy decoding step: 256 rows,
                                                                # 16 sources, 256 wide
    python benchmarks/attention_kernel.py --rows 1280           # beam 5 over the same 256 words
    python benchmarks/attention_kernel.py --threads 1

Times ``scores = v . tanh(q + k)`` for one decoding step, (rows, 1, A) queries against (rows, S, A)
keys:

* ``torch_us``: what :func:`attnkit.attention.scores.additive_scores` does without the kernel (a
  broadcast add into a (rows, 1, S, A) tensor, tanh in place, a matmul with v);
* ``native_us``: :func:`attnkit.accel.native.additive_energies`, one pass, nothing
  (rows, S, A)-sized written;
* ``native_keep_tanh_us``: the same, also writing tanh(q + k) as the training loop does for its
  backward.

For scale it also times single elementwise ops on a tensor of rows * S * A floats (ns per element),
which shows what tanh costs on this CPU next to an exp or a multiply, and reports the largest score
difference between the kernel and torch.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import torch

from attnkit.accel import native

sys.path.insert(0, str(Path(__file__).resolve().parent))  # cell_kernels beside this script
from cell_kernels import median_us  # noqa: E402


def torch_energies(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    return (q.unsqueeze(-2) + k.unsqueeze(-3)).tanh_() @ v


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--rows", type=int, default=256, help="decoder rows (batch x beam)")
    ap.add_argument("--source", type=int, default=16, help="source positions")
    ap.add_argument("--width", type=int, default=256, help="attention width A")
    ap.add_argument("--repeats", type=int, default=100)
    ap.add_argument("--threads", type=int, default=0, help="torch CPU threads (0 = default)")
    args = ap.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    lib = native.library()
    torch.manual_seed(0)
    b, s, a = args.rows, args.source, args.width
    q, k, v = torch.randn(b, 1, a), torch.randn(b, s, a), torch.randn(a) * 0.1
    hidden = torch.empty(b, 1, s, a)
    x, out = torch.randn(b * s * a), torch.empty(b * s * a)
    result = {
        "rows": b,
        "source": s,
        "width": a,
        "threads": torch.get_num_threads(),
        "repeats": args.repeats,
        "native_kernel_built": lib is not None,
        "torch_us": median_us(lambda: torch_energies(q, k, v), args.repeats),
    }
    if lib is not None:
        with native.allowed():  # the kernels are opt-in
            _time_kernel(result, q, k, v, hidden, args.repeats)
    ops = {
        "tanh": lambda: torch.tanh(x, out=out),
        "sigmoid": lambda: torch.sigmoid(x, out=out),
        "exp": lambda: torch.exp(x, out=out),
        "mul": lambda: torch.mul(x, x, out=out),
    }
    result["elementwise_ns_per_element"] = {
        name: round(median_us(fn, args.repeats) * 1e3 / x.numel(), 3) for name, fn in ops.items()
    }
    print(json.dumps(result))


def _time_kernel(result: dict, q, k, v, hidden, repeats: int) -> None:
    """The kernel's timings and its largest difference from torch, into ``result``."""
    result["native_us"] = median_us(lambda: native.additive_energies(q, k, v), repeats)
    result["native_keep_tanh_us"] = median_us(
        lambda: native.additive_energies(q, k, v, hidden), repeats
    )
    result["torch_over_native"] = round(result["torch_us"] / result["native_us"], 2)
    result["max_abs_diff_native_vs_torch"] = float(
        (native.additive_energies(q, k, v) - torch_energies(q, k, v)).abs().max()
    )


if __name__ == "__main__":
    main()
