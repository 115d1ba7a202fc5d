"""The work one training update and one decode of the speed benchmark's Transformer do, counted
rather than timed: torch's aten ops (``torch.profiler``) and Python calls (``cProfile``). Counts
do not move with the machine's load, so two trees that do the same work show the same counts
even where their timings differ by the noise of a shared machine.

Run it from the root of the tree to count, with that tree's source first on the path (it uses
that tree's ``benchmarks/speed.py`` to build the model and its batches)::

    cd TREE && PYTHONPATH=TREE/src python /path/to/benchmarks/op_count.py --out counts.json

It counts the 4th training update (after 3 untimed ones) and the greedy and beam-5 translation
of the first 256 dev entries, for ``speed.py --arch transformer --emb 256 --layers 3 --heads 4
--ff 1024`` on one thread, and prints the totals; ``--out`` keeps every op's count.
"""

from __future__ import annotations

import argparse
import collections
import cProfile
import json
import pstats
import sys
from pathlib import Path

import torch

MODEL = ["--arch", "transformer", "--emb", "256", "--layers", "3", "--heads", "4", "--ff", "1024"]


def aten_ops(fn):
    """``fn()``'s result and how many times each aten op ran in it."""
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CPU]) as prof:
        result = fn()
    return result, collections.Counter(event.name for event in prof.events())


def python_calls(fn) -> int:
    """How many Python function calls ``fn()`` makes."""
    profiler = cProfile.Profile()
    profiler.enable()
    fn()
    profiler.disable()
    return pstats.Stats(profiler).total_calls


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--data", default="../shared/data/cmudict", help="CMUdict folder")
    p.add_argument("--out", default=None, help="write every op's count here as JSON")
    args = p.parse_args()
    sys.path.insert(0, str(Path.cwd() / "benchmarks"))  # the counted tree's speed.py
    import speed

    torch.manual_seed(0)
    torch.set_num_threads(1)
    options = speed.parser().parse_args([*MODEL, "--skip-anchor", "--data", args.data])
    device = torch.device("cpu")
    cfg, splits, vocabs, model, batches = speed.build(options, device)
    from attnkit.training.optim import adam

    optimiser = adam(model.parameters(), 1e-3)
    model.train()
    stream = speed._cycle(batches)
    for _ in range(3):
        speed._update(model, optimiser, next(stream).to(device))
    batch = next(stream).to(device)
    counts = {}
    rng = torch.get_rng_state()
    (loss, _), ops = aten_ops(lambda: speed._update(model, optimiser, batch))
    torch.set_rng_state(rng)
    counts["train_update"] = {"loss": float(loss), "aten": ops}
    counts["train_update"]["python_calls"] = python_calls(
        lambda: speed._update(model, optimiser, batch)
    )
    try:
        from attnkit.families.seq2seq.translator import Translator
    except ImportError:  # trees before the family homes kept it at the top
        from attnkit.translator import Translator

    model.eval()
    translator = Translator(model, cfg, *vocabs, device)
    entries = [source for source, _ in splits.dev][:256]
    for beam in (1, 5):

        def decode(beam=beam):
            return translator.translate(entries, beam_size=beam)

        with torch.inference_mode():
            hyps, ops = aten_ops(decode)
            calls = python_calls(decode)
        counts[f"beam{beam}"] = {"aten": ops, "python_calls": calls, "first": str(hyps[:2])}
    summary = {
        name: {"aten_events": sum(c["aten"].values()), "python_calls": c["python_calls"]}
        for name, c in counts.items()
    }
    summary["train_update"]["loss"] = counts["train_update"]["loss"]
    print(json.dumps(summary))
    if args.out:
        Path(args.out).write_text(json.dumps(counts, indent=1, default=str))


if __name__ == "__main__":
    main()
