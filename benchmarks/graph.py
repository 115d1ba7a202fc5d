"""Graph attention benchmarks: Cora accuracy over seeds, DictionaryLookup, speed against PyG.

    python benchmarks/graph.py cora --seeds 10 [--models gat,gatv2,const,gcn] --out FILE.json
    python benchmarks/graph.py cora --models gcn --seeds 5 --first-seed 5   # seeds 5..9
    python benchmarks/graph.py lookup --k 5,10,20 --out FILE.json
    python benchmarks/graph.py speed --epochs 200 --out FILE.json     # needs torch_geometric

``cora``: each model of ``configs/cora_<model>.yaml`` trained with ``train.seed`` = 0..N-1
through ``attnkit.train`` (the same loop, early stopping and checkpoints as ``attnkit train``),
then its best checkpoint's test accuracy; mean and sample standard deviation per model.
``lookup``: ``configs/lookup_gat.yaml`` and ``lookup_gatv2.yaml`` with ``data.k`` = each k, the
training accuracy of the final model (Brody et al. 2022, Sec. 4.1: can it fit the training
graphs?). ``speed``: full-batch training epochs per second of attnkit's GAT and of PyTorch
Geometric's ``GATConv`` in the model of PyG's ``examples/gat.py`` (the same sizes, dropout and
optimizer, features row-normalised), on the same Cora tensors, alternating, one thread; and the
peak resident memory each adds. Everything prints JSON and, with ``--out``, writes it.
Cora is read from ``$ATTNKIT_DATA_DIR/planetoid`` (set to ``../shared/data`` when unset and that
exists).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "src"))
SHARED = REPO.parent / "shared" / "data"
if not os.environ.get("ATTNKIT_DATA_DIR") and (SHARED / "planetoid").is_dir():
    os.environ["ATTNKIT_DATA_DIR"] = str(SHARED)

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

import attnkit  # noqa: E402
from attnkit.data.graph.sources import GraphDataConfig, load_graph  # noqa: E402
from attnkit.families.graph.adapter import DeviceGraph  # noqa: E402
from attnkit.models.graph import GraphModelConfig, GraphNet  # noqa: E402
from attnkit.training.state import read_state  # noqa: E402

QUIET = {"train.verbose": False, "train.tensorboard": False, "train.threads": 1}


def _machine() -> str:
    sys.path.insert(0, str(REPO / "benchmarks"))
    from machine_info import one_line

    return one_line()


def cora(models: list[str], seeds: int, work: Path, first: int = 0) -> dict:
    """Test accuracy of each model over ``seeds`` seeds, ``first`` the first."""
    table = {}
    for name in models:
        runs = []
        for seed in range(first, first + seeds):
            began = time.perf_counter()
            run = attnkit.train(
                REPO / "configs" / f"cora_{name}.yaml",
                {**QUIET, "train.seed": seed},
                output_dir=work / f"{name}-{seed}",
                overwrite=True,
            )
            model = attnkit.load(run.best, "cpu")
            scores = model.evaluate("test", out=work / f"{name}-{seed}-eval")
            state = read_state(run.last)
            runs.append(
                {
                    "seed": seed,
                    "test_accuracy": scores["accuracy"],
                    "epochs": state.epoch,
                    "best_epoch": state.best_epoch,
                    "seconds": round(time.perf_counter() - began, 1),
                }
            )
            print(json.dumps({"model": name, **runs[-1]}), file=sys.stderr, flush=True)
        accuracies = [r["test_accuracy"] for r in runs]
        table[name] = {
            "mean": round(statistics.mean(accuracies), 2),
            "std": round(statistics.stdev(accuracies), 2) if len(accuracies) > 1 else 0.0,
            "runs": runs,
        }
    return table


def lookup(
    ks: list[int], work: Path, pictures: Path | None = None, models=("gat", "gatv2")
) -> dict:
    """Training accuracy of GAT and GATv2 on DictionaryLookup for each k; with ``pictures``,
    ``graph_lookup_k<k>.png`` there: the query x key attention of both on one test graph."""
    from attnkit.explain.graph import lookup_matrix
    from attnkit.viz.graph import lookup_figure
    from attnkit.viz.visual import save_figure

    table = {}
    for k in ks:
        matrices = []
        for name in models:
            began = time.perf_counter()
            run = attnkit.train(
                REPO / "configs" / f"lookup_{name}.yaml",
                {**QUIET, "data.k": k},
                output_dir=work / f"lookup-{name}-{k}",
                overwrite=True,
            )
            model = attnkit.load(run.last, "cpu")
            train = model.evaluate("train", out=work / f"lookup-{name}-{k}-eval")["accuracy"]
            table[f"{name}_k{k}"] = {
                "model": name,
                "k": k,
                "train_accuracy": train,
                "seconds": round(time.perf_counter() - began, 1),
            }
            print(json.dumps(table[f"{name}_k{k}"]), file=sys.stderr, flush=True)
            test_graph = int(model.graph.extra["graph"][model.graph.masks["test"]].min())
            matrix = lookup_matrix(model.net, model.graph, model.data, test_graph)
            matrices.append((f"{name.upper()}, k={k}: train accuracy {train:.1f}%", matrix))
        if pictures is not None:
            save_figure(lookup_figure(matrices), pictures / f"graph_lookup_k{k}.png")
    return table


class PygGAT(torch.nn.Module):
    """PyG's examples/gat.py: GATConv(D, 8, heads=8, dropout=0.6) -> ELU -> GATConv(64, C)."""

    def __init__(self, in_dim: int, classes: int):
        super().__init__()
        from torch_geometric.nn import GATConv

        self.conv1 = GATConv(in_dim, 8, heads=8, dropout=0.6)
        self.conv2 = GATConv(64, classes, heads=1, concat=False, dropout=0.6)

    def forward(self, x, edge_index):
        x = F.dropout(x, p=0.6, training=self.training)
        x = F.elu(self.conv1(x, edge_index))
        x = F.dropout(x, p=0.6, training=self.training)
        return F.log_softmax(self.conv2(x, edge_index), dim=-1)


def _epochs_per_second(step, epochs: int) -> float:
    for _ in range(5):
        step()
    began = time.perf_counter()
    for _ in range(epochs):
        step()
    return epochs / (time.perf_counter() - began)


def _rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def speed(epochs: int, rounds: int, only: str | None = None) -> dict:
    """Training epochs per second (one update and one evaluation forward each) of attnkit's GAT
    and PyG's, on the same graph and one thread, alternating ``rounds`` times."""
    torch.set_num_threads(1)
    graph = load_graph(GraphDataConfig(name="cora"))
    ours_data = DeviceGraph.of(graph, True, torch.device("cpu"))  # sparse features
    dense = DeviceGraph(graph.x, ours_data.y, ours_data.edge_index, ours_data.masks)
    ours = GraphNet(GraphModelConfig(), graph.num_features, len(graph.classes))
    theirs = PygGAT(graph.num_features, len(graph.classes))
    plain_edges = graph.edge_index  # PyG's GATConv adds its self-loops itself
    mask, y = ours_data.masks["train"], ours_data.y

    def stepper(model, x, edges):
        opt = torch.optim.Adam(model.parameters(), lr=0.005, weight_decay=5e-4)

        def step():
            model.train()
            out = model(x, edges)
            log_probs = out[0] if isinstance(out, tuple) else out
            loss = F.nll_loss(log_probs[mask], y[mask])
            opt.zero_grad()
            loss.backward()
            opt.step()
            model.eval()
            with torch.no_grad():
                model(x, edges)

        return step

    steps = {
        "attnkit": stepper(ours, ours_data.x, ours_data.edge_index),
        "attnkit_dense_features": stepper(ours, dense.x, dense.edge_index),
        "pyg": stepper(theirs, graph.x, plain_edges),
    }
    if only is not None:  # one model in this process: its memory alone
        _epochs_per_second(steps[only], epochs)
        return {"peak_rss_mb": round(_rss_mb(), 1)}
    rates: dict[str, list[float]] = {name: [] for name in steps}
    for _ in range(rounds):
        for name, step in steps.items():
            rates[name].append(_epochs_per_second(step, epochs))
    best = {name: max(r) for name, r in rates.items()}
    peak = {name: _memory_of(name, epochs) for name in steps}
    return {
        "epochs_per_s": {name: round(v, 2) for name, v in best.items()},
        "all_rounds": {name: [round(v, 2) for v in r] for name, r in rates.items()},
        "ratio_attnkit_over_pyg": round(best["attnkit"] / best["pyg"], 2),
        "ratio_dense_features_over_pyg": round(best["attnkit_dense_features"] / best["pyg"], 2),
        "peak_rss_mb": peak,
        "note": "peak resident memory (ru_maxrss) of a whole process that imports torch (and "
        "torch_geometric), reads Cora and trains that model alone for the same epochs",
    }


def _memory_of(name: str, epochs: int) -> float:
    """Peak memory growth of training model ``name`` alone, in a fresh process."""
    command = [sys.executable, __file__, "speed", "--only", name, "--epochs", str(epochs)]
    done = subprocess.run(command, capture_output=True, text=True, check=True)
    return json.loads(done.stdout)["result"]["peak_rss_mb"]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("part", choices=("cora", "lookup", "speed"))
    parser.add_argument("--models", default="gat,gatv2,const,gcn")
    parser.add_argument("--seeds", type=int, default=10)
    parser.add_argument("--first-seed", type=int, default=0, help="cora: seeds from this one")
    parser.add_argument("--k", default="5,10,20")
    parser.add_argument("--epochs", type=int, default=100, help="speed: epochs per timing")
    parser.add_argument("--rounds", type=int, default=3, help="speed: timings of each")
    parser.add_argument("--only", default=None, help=argparse.SUPPRESS)  # speed: memory of one
    parser.add_argument("--pictures", type=Path, default=None, help="lookup: a directory")
    parser.add_argument("--lookup-models", default="gat,gatv2", help="lookup: which configs")
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    with tempfile.TemporaryDirectory(prefix="attnkit-graph-bench-") as tmp:
        work = Path(tmp)
        if args.part == "cora":
            result = cora(args.models.split(","), args.seeds, work, args.first_seed)
        elif args.part == "lookup":
            ks = [int(k) for k in args.k.split(",")]
            result = lookup(ks, work, args.pictures, args.lookup_models.split(","))
        else:
            result = speed(args.epochs, args.rounds, args.only)
    if args.only:
        print(json.dumps({"result": result}))
        return 0
    doc = {"part": args.part, "machine": _machine(), "threads": 1, "result": result}
    text = json.dumps(doc, indent=1)
    print(text)
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(text + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
