"""Pictures of graph attention (pure functions: arrays and labels in, a matplotlib Figure out).

- :func:`neighbourhood_figure`: a node's two-hop neighbourhood, every edge shaded and widened by
  the attention it carries into its target, one panel per head; nodes coloured by class (a
  legend names them), the node itself ringed and named, its most attended neighbours named with
  their weights, its true and predicted class in the (wrapped) title.
- :func:`entropy_figure`: each node's attention entropy per head against the entropy of
  uniform attention over its degree (what constant attention would have).
- :func:`lookup_figure`: the query x key attention matrices of DictionaryLookup side by side
  (GAT against GATv2: Brody et al. 2022, Figure 1).
- :func:`saliency_figure`: the attention into a node from each neighbour beside the gradient
  saliency of its prediction over that neighbour's features.
"""

from __future__ import annotations

import textwrap
from dataclasses import dataclass

import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

_PANEL = 4.2  # inches per panel
_NAMED = 5  # neighbours named per panel: the most attended ones


def _figure(panels: int, cols: int = 4, height: float = _PANEL) -> tuple[Figure, list]:
    cols = max(1, min(panels, cols))
    rows = -(-panels // cols)
    # constrained layout keeps titles, labels and the legend inside the canvas
    fig = Figure(figsize=(cols * _PANEL, rows * height + 0.5), dpi=100, layout="constrained")
    FigureCanvasAgg(fig)
    return fig, [fig.add_subplot(rows, cols, i + 1) for i in range(panels)]


@dataclass
class Neighbourhood:
    """What :func:`neighbourhood_figure` draws. M nodes (``nodes[0]`` the centre), K edges."""

    names: list[str]  # (M,) node names
    classes: np.ndarray  # (M,) class ids (-1: none)
    class_names: list[str]
    hops: np.ndarray  # (M,) distance from the centre
    edges: np.ndarray  # (K, 2) local (source, target) indices
    weights: np.ndarray | None  # (K, H) attention of each edge per head (None: no attention)
    true: str
    predicted: str
    title: str = ""


def _positions(n: Neighbourhood) -> np.ndarray:
    """Rings: the centre in the middle, each hop on a circle, neighbours spread by angle."""
    pos = np.zeros((len(n.names), 2))
    for hop in range(1, int(n.hops.max(initial=0)) + 1):
        ring = np.flatnonzero(n.hops == hop)
        angles = 2 * np.pi * (np.arange(len(ring)) + 0.5 * (hop - 1)) / max(len(ring), 1)
        pos[ring] = hop * np.stack([np.cos(angles), np.sin(angles)], 1)
    return pos


def _colours(n: Neighbourhood) -> list:
    from matplotlib import colormaps

    palette = colormaps["tab10"]
    return [palette(c % 10) if c >= 0 else (0.8, 0.8, 0.8, 1) for c in n.classes]


def _named(n: Neighbourhood, weights: np.ndarray | None) -> dict[int, str]:
    """Node position -> its label: the centre (with its self-loop's weight) and the direct
    neighbours it attends to most (with their weights; the first few without attention)."""
    into = [k for k, (s, t) in enumerate(n.edges) if t == 0 and s != 0]
    own = [k for k, (s, t) in enumerate(n.edges) if s == t == 0]
    if weights is not None:
        into.sort(key=lambda k: -float(weights[k]))
    self_loop = f" (self {weights[own[0]]:.2f})" if own and weights is not None else ""
    labels = {0: n.names[0] + self_loop}
    for k in into[:_NAMED]:
        source = int(n.edges[k][0])
        labels[source] = n.names[source] + ("" if weights is None else f" {weights[k]:.2f}")
    return labels


def _draw_panel(ax, n: Neighbourhood, pos: np.ndarray, weights: np.ndarray | None, title: str):
    from matplotlib import colormaps

    cmap = colormaps["Blues"]
    for k, (s, t) in enumerate(n.edges):
        if s == t:
            continue
        w = 0.5 if weights is None else float(weights[k])
        ax.annotate(
            "",
            xy=pos[t],
            xytext=pos[s],
            arrowprops={
                "arrowstyle": "-|>",
                "color": cmap(0.25 + 0.75 * w),
                "lw": 0.4 + 4.0 * w,
                "alpha": 0.3 + 0.7 * w,
                "shrinkA": 5,
                "shrinkB": 5,
            },
        )
    sizes = [160 if h == 0 else (60 if h == 1 else 25) for h in n.hops]
    ax.scatter(pos[:, 0], pos[:, 1], c=_colours(n), s=sizes, zorder=3, edgecolors="black", lw=0.3)
    ax.scatter(*pos[0], s=320, facecolors="none", edgecolors="red", lw=1.5, zorder=4)
    box = {"boxstyle": "round,pad=0.15", "fc": "white", "ec": "none", "alpha": 0.8}
    for i, label in _named(n, weights).items():
        centre = i == 0  # its name below it, the neighbours' above right
        ax.annotate(
            label,
            pos[i],
            xytext=(0, -16) if centre else (6, 6),
            textcoords="offset points",
            ha="center" if centre else "left",
            fontsize=7,
            fontweight="bold" if centre else "normal",
            bbox=box,
            zorder=5,
        )
    ax.set_title(title, fontsize=9)
    ax.set_aspect("equal")
    ax.margins(0.12)  # room for the names at the rim
    ax.set_axis_off()


def _class_legend(fig: Figure, n: Neighbourhood, columns: int) -> None:
    """Below the panels: each class present (by colour), the ringed node, what an edge shows."""
    from matplotlib.lines import Line2D

    colours = _colours(n)
    handles, seen = [], set()
    for i in np.argsort(n.classes, kind="stable"):
        c = int(n.classes[i])
        if c in seen:
            continue
        seen.add(c)
        name = n.class_names[c] if 0 <= c < len(n.class_names) else "no label"
        handles.append(Line2D([], [], ls="", marker="o", mfc=colours[i], mec="black", label=name))
    handles.append(Line2D([], [], ls="", marker="o", mfc="none", mec="red", ms=10,
                          label=f"node {n.names[0]}"))  # fmt: skip
    handles.append(Line2D([], [], color="#08306b", lw=2.5, label="edge: attention into target"))
    fig.legend(handles=handles, loc="outside lower center", ncols=columns, fontsize=8,
               frameon=False)  # fmt: skip


def neighbourhood_figure(n: Neighbourhood) -> Figure:
    """One panel per head (one panel without attention), edges shaded and widened by weight,
    the centre and its most attended neighbours named, a class legend below."""
    heads = 1 if n.weights is None else n.weights.shape[1]
    fig, axes = _figure(heads)
    width = max(fig.get_figwidth(), 6.4)  # one panel: room for the legend and the title
    fig.set_size_inches(width, fig.get_figheight() + 1.0)
    pos = _positions(n)
    for h, ax in enumerate(axes):
        weights = None if n.weights is None else n.weights[:, h]
        label = "no attention (uniform edges)" if weights is None else f"head {h + 1}"
        _draw_panel(ax, n, pos, weights, label)
    mark = "right" if n.true == n.predicted else "wrong"
    title = (
        f"{n.title}node {n.names[0]}: true {n.true}, predicted {n.predicted} ({mark}); "
        f"{int((n.hops == 1).sum())} neighbours, {int((n.hops == 2).sum())} at two hops"
    )
    chars = int(width * 72 / (10 * 0.62))  # about a 10-point character's width
    fig.suptitle("\n".join(textwrap.wrap(title, chars)), fontsize=10)
    _class_legend(fig, n, columns=max(1, int(width // 2.1)))
    return fig


def entropy_figure(entropy: np.ndarray, uniform: np.ndarray, title: str = "") -> Figure:
    """Histograms of the attention entropy of every node, one line per head ``entropy`` (N, H),
    against the uniform entropy ``log(degree)`` (N,) in grey."""
    fig, (ax,) = _figure(1, height=3.4)
    fig.set_size_inches(7.5, 3.9)
    top = float(max(uniform.max(initial=0), entropy.max(initial=0))) + 1e-6
    bins = np.linspace(0, top, 40)
    ax.hist(uniform, bins=bins, color="0.75", label="uniform over the degree (constant)")
    for h in range(entropy.shape[1]):
        ax.hist(entropy[:, h], bins=bins, histtype="step", lw=1.2, label=f"head {h + 1}")
    ax.set_xlabel("attention entropy of a node (nats)")
    ax.set_ylabel("nodes")
    gap = float((uniform[:, None] - entropy).mean()) if entropy.size else 0.0
    ax.set_title(f"{title}mean gap below uniform: {gap:.4f} nats", fontsize=10)
    ax.legend(fontsize=7, ncol=2)
    return fig


def lookup_figure(matrices: list[tuple[str, np.ndarray]]) -> Figure:
    """Query x key attention ``(k, k)`` matrices side by side, rows and columns ordered by
    attribute (the right key of each query on the diagonal)."""
    fig, axes = _figure(len(matrices))
    fig.set_size_inches(5.2 * len(matrices), 4.8)
    for ax, (title, matrix) in zip(axes, matrices, strict=True):
        image = ax.imshow(matrix, cmap="viridis", vmin=0, vmax=max(float(matrix.max()), 1e-9))
        ax.set_title(title, fontsize=10)
        ticks = np.arange(0, len(matrix), max(1, len(matrix) // 10))
        ax.set_xticks(ticks), ax.set_yticks(ticks)
        ax.set_xlabel("key (by attribute)")
        ax.set_ylabel("query (by attribute)")
        fig.colorbar(image, ax=ax, fraction=0.046, pad=0.04)
    return fig


def saliency_figure(names: list[str], attention: np.ndarray, saliency: np.ndarray, title: str):
    """Bars: each neighbour's attention into the node (mean of heads) and its share of the
    gradient saliency of the node's prediction, side by side."""
    fig, (ax,) = _figure(1, height=3.4)
    fig.set_size_inches(max(6.0, 0.35 * len(names) + 2), 3.9)
    x = np.arange(len(names))
    ax.bar(x - 0.2, attention, 0.4, label="attention (mean of heads)")
    ax.bar(x + 0.2, saliency, 0.4, label="saliency share")
    ax.set_xticks(x, names, rotation=90, fontsize=7)
    ax.set_title(title, fontsize=10)
    ax.legend(fontsize=8)
    return fig
