"""The graph pictures on hand-made neighbourhoods: every title, label and legend inside the
saved canvas, the nodes named (the centre and its most attended neighbours), a class legend."""

from __future__ import annotations

import numpy as np
import pytest

from attnkit.viz.graph import (
    Neighbourhood,
    entropy_figure,
    lookup_figure,
    neighbourhood_figure,
    saliency_figure,
)
from attnkit.viz.visual import save_figure

CLASSES = ["Case_Based", "Genetic_Algorithms", "Neural_Networks", "Probabilistic_Methods",
           "Reinforcement_Learning", "Rule_Learning", "Theory"]  # fmt: skip


def _neighbourhood(heads: int) -> Neighbourhood:
    """Node 1708, eight direct neighbours (1709..1716), twenty at two hops; the centre attends
    most to 1713, least to 1710, in every head."""
    m = 29
    hops = np.array([0] + [1] * 8 + [2] * 20)
    edges = np.array(
        [[0, 0]] + [[i, 0] for i in range(1, 9)] + [[j, 1 + j % 8] for j in range(9, m)]
    )
    weights = np.full((len(edges), heads), 0.05)
    weights[0] = 0.1  # the self-loop
    weights[5] = 0.4  # 1713 -> 1708
    weights[2] = 0.01  # 1710 -> 1708
    classes = np.arange(m) % len(CLASSES)
    names = [str(1708 + i) for i in range(m)]
    return Neighbourhood(names, classes, CLASSES, hops, edges, weights,
                         "Reinforcement_Learning", "Probabilistic_Methods")  # fmt: skip


def _inside(fig, artist) -> bool:
    box = artist.get_window_extent(fig.canvas.get_renderer())
    canvas = fig.bbox
    return (box.x0 >= canvas.x0 - 0.5 and box.y0 >= canvas.y0 - 0.5
            and box.x1 <= canvas.x1 + 0.5 and box.y1 <= canvas.y1 + 0.5)  # fmt: skip


def _texts(fig) -> list[str]:
    return [t.get_text() for ax in fig.axes for t in ax.texts if t.get_text()]  # not the edges


@pytest.mark.parametrize("heads", [1, 8])
def test_title_names_and_legend_lie_inside_the_saved_canvas(tmp_path, heads):
    fig = neighbourhood_figure(_neighbourhood(heads))
    save_figure(fig, tmp_path / "node.png")
    title = fig.get_suptitle()
    assert "node 1708" in title and "predicted Probabilistic_Methods" in title
    assert _inside(fig, fig._suptitle)
    assert len(fig.legends) == 1 and _inside(fig, fig.legends[0])
    assert all(_inside(fig, t) for ax in fig.axes for t in ax.texts)


def test_the_legend_names_each_class_present_and_the_ringed_node(tmp_path):
    n = _neighbourhood(1)
    n.classes[n.classes == 6] = -1  # "Theory" absent; some nodes without a label
    fig = neighbourhood_figure(n)
    labels = [t.get_text() for t in fig.legends[0].get_texts()]
    assert set(CLASSES[:6]) | {"no label", "node 1708"} <= set(labels)
    assert "Theory" not in labels


def test_the_centre_and_its_most_attended_neighbours_are_named():
    texts = _texts(neighbourhood_figure(_neighbourhood(2)))
    assert sum(t.startswith("1708 (self 0.10)") for t in texts) == 2  # one per head
    assert "1713 0.40" in texts
    assert not any(t.startswith("1710") for t in texts)  # the least attended of eight
    assert not any(t.startswith("1720") for t in texts)  # two hops away


def test_without_attention_the_centre_and_some_neighbours_are_named():
    n = _neighbourhood(1)
    n.weights = None
    texts = _texts(neighbourhood_figure(n))
    assert "1708" in texts and len(texts) == 6


def test_the_other_graph_pictures_keep_their_labels_inside(tmp_path):
    rng = np.random.default_rng(0)
    figures = [
        entropy_figure(rng.random((50, 2)), rng.random(50) + 1, "layer 1: "),
        lookup_figure([("gatv2: graph 0, query x key", rng.random((6, 6)))]),
        saliency_figure([f"node {i}" for i in range(12)], rng.random(12), rng.random(12), "t"),
    ]
    for fig in figures:
        save_figure(fig, tmp_path / "f.png")
        for ax in fig.axes:
            for artist in (ax.title, ax.xaxis.label, ax.yaxis.label):
                if artist.get_text():
                    assert _inside(fig, artist), artist.get_text()
