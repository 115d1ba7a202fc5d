#!/usr/bin/env python3
"""What attnkit.capture costs: a BERT-base-sized encoder (12 layers, 12 heads, width 768, random
weights) on the CPU, one input of 128, 512 and 2,048 tokens. Prints ONE JSON object.

    python benchmarks/capture.py --threads 1
    python benchmarks/capture.py --threads 1 --lengths 128 512 --repeats 5
    python benchmarks/capture.py --threads 1 --eager-up-to 512     # eager left out above 512

For each length, in a fresh process (one warm-up forward, then ``--repeats`` timed ones, the
median kept), under ``torch.no_grad()``:

* ``sdpa``: the model's plain forward (``attn_implementation="sdpa"``);
* ``capture_all``: the same forward inside ``with attnkit.capture(model)``, every layer's and
  head's weights (L x H x T x T) kept;
* ``capture_one_layer``: ``attnkit.capture(model, layers=[0])``;
* ``capture_rollout``: ``attnkit.capture(model, online="rollout")``: no map kept, the rollout
  (T x T) multiplied on layer by layer;
* ``eager_output_attentions``: the model switched to eager attention, ``output_attentions=True``.

The capture's time includes entering and leaving the ``with`` block. Memory: ``peak_mb`` is the
process's peak resident memory during the timed forwards (VmHWM, reset before each variant through
/proc/self/clear_refs), ``peak_delta_mb`` that peak less the resident memory just before them
(the model's weights, the input and the interpreter are in ``peak_mb`` and not in the delta).

The model is HF transformers' BertModel built from a BertConfig when transformers is installed,
else a hand-written encoder of the same sizes calling F.scaled_dot_product_attention (``model``
says which). ``ratios`` compare each variant with ``sdpa`` (and capture_all with eager), beside
the targets of issue 40: one layer within 1.05x the SDPA forward's time, all layers within 1.2x
and faster than eager, online rollout at 2,048 tokens within 1.1x the SDPA forward's peak memory.
"""

from __future__ import annotations

import argparse
import gc
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))  # machine_info and train_memory beside this script
from machine_info import describe  # noqa: E402
from train_memory import memory_mb  # noqa: E402

TARGETS = {
    "capture_one_layer_time_vs_sdpa": 1.05,
    "capture_all_time_vs_sdpa": 1.2,
    "capture_all_time_vs_eager": 1.0,
    "capture_rollout_peak_vs_sdpa_at_2048": 1.1,
}


def reset_peak() -> None:
    """Start VmHWM again from the resident memory now (Linux: clear_refs 5)."""
    with open("/proc/self/clear_refs", "w") as handle:
        handle.write("5")


def build(length: int):
    """(model, inputs, name, to_eager) for one input of ``length`` tokens."""
    import torch

    torch.manual_seed(0)
    ids = torch.randint(1000, 30000, (1, length))
    try:
        import transformers
    except ImportError:
        return _own_encoder(length, ids)
    config = transformers.BertConfig(max_position_embeddings=max(512, length))
    model = transformers.BertModel._from_config(config, attn_implementation="sdpa").eval()
    inputs = {"input_ids": ids, "attention_mask": torch.ones_like(ids)}

    def to_eager():
        model.set_attn_implementation("eager")
        return lambda: model(**inputs, output_attentions=True)

    name = f"transformers {transformers.__version__} BertModel (bert-base sizes, random weights)"
    return model, lambda: model(**inputs), name, to_eager


def _own_encoder(length: int, ids):
    """A hand-written BERT-base-sized encoder: (model, forward, name, to_eager)."""
    import torch.nn.functional as F
    from torch import nn

    class Layer(nn.Module):
        def __init__(self, d=768, h=12):
            super().__init__()
            self.h, self.qkv, self.out = h, nn.Linear(d, 3 * d), nn.Linear(d, d)
            self.ff = nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(), nn.Linear(4 * d, d))
            self.norm1, self.norm2, self.eager, self.maps = nn.LayerNorm(d), nn.LayerNorm(d), 0, []

        def forward(self, x):
            b, t, d = x.shape
            q, k, v = self.qkv(x).view(b, t, 3, self.h, -1).permute(2, 0, 3, 1, 4)
            if self.eager:
                weights = (q @ k.transpose(-2, -1) / (d // self.h) ** 0.5).softmax(-1)
                self.maps.append(weights)
                context = weights @ v
            else:
                context = F.scaled_dot_product_attention(q, k, v)
            x = self.norm1(x + self.out(context.transpose(1, 2).reshape(b, t, d)))
            return self.norm2(x + self.ff(x))

    model = nn.Sequential(nn.Embedding(30522, 768), *[Layer() for _ in range(12)]).eval()

    def to_eager():
        for layer in model[1:]:
            layer.eager = True
        return lambda: (model(ids), [layer.maps.pop() for layer in model[1:]])

    return model, lambda: model(ids), "hand-written SDPA encoder (bert-base sizes)", to_eager


def measure(length: int, repeats: int, with_eager: bool) -> dict:
    """Every variant at one length, in this process."""
    import torch

    import attnkit

    model, forward, name, to_eager = build(length)
    runs = {
        "sdpa": forward,
        "capture_all": lambda: _captured(attnkit.capture(model), forward),
        "capture_one_layer": lambda: _captured(attnkit.capture(model, layers=[0]), forward),
        "capture_rollout": lambda: _captured(attnkit.capture(model, online="rollout"), forward),
    }
    out = {"model": name}
    with torch.no_grad():
        for variant, run in runs.items():
            out[variant] = _time(run, repeats)
        if with_eager:
            out["eager_output_attentions"] = _time(to_eager(), repeats)
    return out


def _captured(context, forward):
    with context as captured:
        forward()
    return captured


def _time(run, repeats: int) -> dict:
    """One warm-up, then ``repeats`` timed calls: median seconds and the peak memory."""
    run()
    gc.collect()
    before = memory_mb()["rss"]
    reset_peak()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        result = run()
        times.append(time.perf_counter() - start)
        del result
    peak = memory_mb()["peak"]
    gc.collect()
    return {
        "time_s": round(statistics.median(times), 4),
        "times_s": [round(t, 4) for t in times],
        "peak_mb": peak,
        "peak_delta_mb": round(peak - before, 1),
    }


def ratios(row: dict) -> dict:
    """Each variant against the SDPA forward (time, and peak memory as a whole and as a delta)."""
    base = row["sdpa"]
    out = {}
    for variant in ("capture_all", "capture_one_layer", "capture_rollout", "eager_output_attentions"):
        if variant in row:
            out[f"{variant}_time_vs_sdpa"] = round(row[variant]["time_s"] / base["time_s"], 3)
            out[f"{variant}_peak_vs_sdpa"] = round(row[variant]["peak_mb"] / base["peak_mb"], 3)
            delta = max(base["peak_delta_mb"], 1.0)
            out[f"{variant}_peak_delta_vs_sdpa"] = round(row[variant]["peak_delta_mb"] / delta, 2)
    if "eager_output_attentions" in row:
        eager = row["eager_output_attentions"]["time_s"]
        out["capture_all_time_vs_eager"] = round(row["capture_all"]["time_s"] / eager, 3)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--lengths", type=int, nargs="+", default=[128, 512, 2048])
    ap.add_argument("--repeats", type=int, default=3, help="timed forwards per variant")
    ap.add_argument("--threads", type=int, default=0, help="torch CPU threads (0 = default)")
    ap.add_argument(
        "--eager-up-to",
        type=int,
        default=None,
        help="leave the eager variant out above this length (it keeps L x H x T x T maps)",
    )
    ap.add_argument("--one", type=int, help=argparse.SUPPRESS)  # a child: measure this length
    args = ap.parse_args()
    if args.threads:
        import torch

        torch.set_num_threads(args.threads)
    if args.one is not None:
        with_eager = args.eager_up_to is None or args.one <= args.eager_up_to
        print(json.dumps(measure(args.one, args.repeats, with_eager)))
        return
    result = {"threads": args.threads or "default", "repeats": args.repeats, "batch": 1}
    result["machine"] = describe()
    result["lengths"], skipped = {}, {}
    for length in args.lengths:
        child = [sys.executable, __file__, "--one", str(length), "--repeats", str(args.repeats)]
        child += ["--threads", str(args.threads)]
        if args.eager_up_to is not None:
            child += ["--eager-up-to", str(args.eager_up_to)]
        done = subprocess.run(child, capture_output=True, text=True)
        if done.returncode:
            skipped[str(length)] = done.stderr.strip().splitlines()[-1:]
            continue
        row = json.loads(done.stdout.strip().splitlines()[-1])
        result["model"] = row.pop("model")
        row["ratios"] = ratios(row)
        result["lengths"][str(length)] = row
        if "eager_output_attentions" not in row:
            skipped[f"{length} eager_output_attentions"] = f"--eager-up-to {args.eager_up_to}"
    result["skipped"] = skipped
    result["targets"] = TARGETS
    print(json.dumps(result))


if __name__ == "__main__":
    main()
