"""A graph checkpoint in Python: predict nodes, explain one node's prediction, evaluate.

Used by ``attnkit evaluate``/``plot``/``explain`` of graph checkpoints and by notebooks::

    model = attnkit.load("runs/cora_gat/best")
    e = model.explain_node(1708)      # a node's index (or its name in the data)
    e.prediction, e.label, e.agreement
    e.plot("node.png")                # its two-hop neighbourhood, one panel per head
    e.show()                          # the same inline in a notebook, with its weights
    model.evaluate()                  # test accuracy; writes report.html
"""

from __future__ import annotations

import html
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch

from attnkit.checkpoint import checkpoint_dir
from attnkit.errors import ConfigError, InputError
from attnkit.evaluation.scores import Scores
from attnkit.families import arguments as check
from attnkit.families.graph.adapter import DeviceGraph
from attnkit.families.graph.bundle import load_graph_model
from attnkit.viz.inline import show_html


@dataclass
class NodeExplanation:
    """One node's prediction, the attention over its two-hop neighbourhood and the gradient
    saliency of the same prediction over its neighbours' features.

    ``neighbours``: the names of the M nodes (the node first, then by distance ``hops``);
    ``classes``: their true classes ("-": none); ``edges``: (K, 2) pairs of positions in
    ``neighbours`` (source, target); ``weights``: per attention layer a (K, H) array (empty for
    GCN); ``saliency``: (M,) shares summing to 1;
    ``agreement``: Spearman's rho between the last layer's attention into the node and the
    saliency of its direct neighbours, and whether their top neighbour is the same."""

    node: str
    index: int
    label: str
    prediction: str
    probs: list[float]
    neighbours: list[str]
    hops: list[int]
    edges: np.ndarray
    weights: list[np.ndarray]
    saliency: np.ndarray
    agreement: dict[str, Any] | None
    classes: list[str] = field(default_factory=list)
    figure_of: Any = field(default=None, repr=False)  # (layer) -> Figure, set by the model

    def to_dict(self) -> dict[str, Any]:
        return {
            "node": self.node,
            "index": self.index,
            "label": self.label,
            "prediction": self.prediction,
            "probs": [round(p, 6) for p in self.probs],
            "neighbours": self.neighbours,
            "hops": self.hops,
            "edges": self.edges.tolist(),
            "weights": [np.round(w, 6).tolist() for w in self.weights],
            "saliency": np.round(self.saliency, 6).tolist(),
            "agreement": self.agreement,
        }

    def plot(self, path=None, layer: int = -1):
        """The neighbourhood, one panel per head of attention layer ``layer`` (the last by
        default), saved to ``path`` (.png or .svg) when given; the Figure."""
        fig = self.figure_of(layer)
        if path is not None:
            from attnkit.viz.visual import save_figure

            save_figure(fig, path)
        return fig

    def show(self) -> Path | None:
        return show_html(self._repr_html_(), f"node-{self.index}")

    def _repr_html_(self) -> str:
        from attnkit.evaluation.graph import _png  # the same inline PNG as report.html

        esc = html.escape
        rows = []
        into = [k for k, (s, t) in enumerate(self.edges) if t == 0]
        for k in into:
            source = int(self.edges[k][0])
            heads = " ".join(f"{w:.3f}" for w in self.weights[-1][k]) if self.weights else "-"
            cls = self.classes[source] if self.classes else "-"
            rows.append(
                f"<tr><td>{esc(self.neighbours[source])}</td><td>{esc(cls)}</td><td>{heads}</td>"
                f"<td>{self.saliency[source]:.3f}</td></tr>"
            )
        return (
            f"<div><p>node {esc(self.node)}: label {esc(self.label)}, predicted "
            f"{esc(self.prediction)}; agreement {esc(str(self.agreement))}</p>"
            f'<img alt="neighbourhood" src="{_png(self.plot())}">'
            "<table><tr><th>neighbour</th><th>class</th><th>attention per head</th>"
            "<th>saliency</th></tr>" + "".join(rows) + "</table></div>"
        )


class GraphModel:
    """A loaded graph checkpoint: ``config``, ``graph`` (the data it was trained on, read again)
    and ``net`` (the torch module, in eval mode)."""

    family = "graph"

    def __init__(self, config, graph, net, path: Path | None = None):
        self.config, self.graph, self.net, self.path = config, graph, net, path
        device = next(net.parameters()).device
        self.data = DeviceGraph.of(graph, config.model.self_loops, device)

    @classmethod
    def load(cls, directory: str | Path, device: str = "auto") -> GraphModel:
        cfg, graph, net = load_graph_model(directory, device)
        return cls(cfg, graph, net, checkpoint_dir(directory))

    def __repr__(self) -> str:
        return f"GraphModel({self.config.model.type}, data={self.graph.name}, {self.path})"

    def node_index(self, node: int | str) -> int:
        """A node's index: an int, or a name of the data's (the Planetoid names are indices);
        an InputError naming ``node`` otherwise."""
        n = self.graph.num_nodes
        if isinstance(node, str) and node in self._names():
            return self._names()[node]
        if isinstance(node, str):
            if not node.strip().isascii() or not node.strip().isdigit() or len(node) > 20:
                message = f"node {node!r}: no node of that name in {self.graph.name}"
                raise InputError(message, "node")
            node = int(node)
        index = check.integer(node, "node")  # 1.5 is no node: never rounded to one
        if not 0 <= index < n:
            raise InputError(f"node {node}: the graph has nodes 0..{n - 1}", "node")
        return index

    def _names(self) -> dict[str, int]:
        if not hasattr(self, "_name_index"):
            self._name_index = {name: i for i, name in enumerate(self.graph.nodes)}
        return self._name_index

    def predict(self) -> list[str]:
        """The predicted class of every node."""
        from attnkit.explain.graph import forward

        log_probs, _ = forward(self.net, self.data)
        return [self.graph.classes[int(c)] for c in log_probs.argmax(-1).tolist()]

    def explain_node(self, node: int | str) -> NodeExplanation:
        """Node ``node``'s prediction with its attention and saliency (:class:`NodeExplanation`)."""
        from attnkit.explain import graph as explain
        from attnkit.viz.graph import neighbourhood_figure

        index = self.node_index(node)
        found = explain.explain_node(self.net, self.graph, self.data, index)
        label = int(self.graph.y[index])

        def figure(layer: int = -1):
            return neighbourhood_figure(explain.neighbourhood_of(self.graph, found, layer))

        classes = [int(self.graph.y[int(n)]) for n in found["nodes"]]

        return NodeExplanation(
            node=self.graph.nodes[index],
            index=index,
            label=self.graph.classes[label] if label >= 0 else "-",
            prediction=self.graph.classes[found["predicted"]],
            probs=[float(p) for p in found["probs"]],
            neighbours=[self.graph.nodes[int(n)] for n in found["nodes"]],
            hops=[int(h) for h in found["hops"]],
            edges=found["edges"],
            weights=found["weights"],
            saliency=found["saliency"],
            agreement=found["agreement"],
            classes=[self.graph.classes[c] if c >= 0 else "-" for c in classes],
            figure_of=figure,
        )

    def entropy_figure(self, layer: int = 0):
        """The attention entropy of every node per head against uniform attention."""
        from attnkit.explain.graph import entropies
        from attnkit.viz.graph import entropy_figure

        if not self.net.has_attention:
            raise ConfigError("a GCN has no attention: no entropy to draw")
        return entropy_figure(*entropies(self.net, self.data, layer), f"layer {layer + 1}: ")

    def lookup_figure(self, number: int | None = None):
        """DictionaryLookup: graph ``number``'s query x key attention (default: the first test
        graph)."""
        from attnkit.explain.graph import lookup_matrix
        from attnkit.viz.graph import lookup_figure

        if "graph" not in self.graph.extra:
            raise ConfigError(f"{self.graph.name} is not a DictionaryLookup graph")
        if number is None:
            number = int(self.graph.extra["graph"][self.graph.masks["test"]].min())
        matrix = lookup_matrix(self.net, self.graph, self.data, number)
        title = f"{self.config.model.attention}: graph {number}, query x key"
        return lookup_figure([(title, matrix)])

    def evaluate(self, split: str = "test", out: str | Path | None = None) -> Scores:
        """Score ``split`` ("test" or "dev") and write scores.json, predictions.tsv and
        report.html to ``out`` (default ``RUN/eval/CHECKPOINT-SPLIT``)."""
        from attnkit.evaluation.graph import evaluate_to_dir, summary

        check.choice(split, "split", ("train", "dev", "test"))
        if self.path is None:
            raise ConfigError("evaluate: this model was not loaded from a checkpoint directory")
        loaded = (self.config, self.graph, self.net, self.data)
        with torch.no_grad():
            return Scores(evaluate_to_dir(self.path, split, out, loaded), summary)
