"""The graph family's inputs for the hostile-input harness: a tiny GAT on a graph of its own."""

from attnkit.families.fault_inputs import FaultInputs

_SPLITS = ["train"] * 6 + ["dev"] * 3 + ["test"] * 3
_NODES = "".join(
    f"n{i}\t{'ab'[i % 2]}\t{split}\t{i % 2} {(i + 1) % 2} {i % 3}\n"
    for i, split in enumerate(_SPLITS)
)
_EDGES = "".join(f"n{i}\tn{(i + 2) % 12}\n" for i in range(12))

INPUTS = FaultInputs(
    experiment={
        "family": "graph",
        "data": {"name": "edge_list", "nodes": "nodes.tsv", "edges": "edges.tsv"},
        "model": {"attention": "gat", "hidden": 4, "heads": 2},
        # past the 100 epochs between checkpoint writes: an interrupted run has a last/ to resume
        "train": {"epochs": 250, "patience": None, "threads": 1, "progress": False},
    },
    files={"nodes.tsv": _NODES, "edges.tsv": _EDGES},
    data_files=("nodes.tsv", "edges.tsv"),
    resumes=True,
    calls={"explain_node": {"node": 1}, "evaluate": {"split": "dev"}},
    commands=(("explain", "--model", "{model}", "--node", "1", "--out", "ex"),),
    request={"node": 1},
)
