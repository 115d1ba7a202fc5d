"""An image model's attention over its picture (ViT): where the [CLS] query, the position a
classifier's answer is read from, looks among the patches. :func:`patch_grid` reshapes one row
of a (T, T) map to the patches' (rows, cols) grid; :func:`picture_html` is the inline view
``PretrainedResult.show()`` adds for an image (each layer's mean over its heads, then the
rollout, on a slider); :func:`plot_patches` draws the picture with one map over it beside the
map itself (``attnkit plot --model hf:DIR --image FILE``).

Shapes: L layers, H heads, T positions (the leading special ones, then rows x cols patches).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from attnkit.errors import AttnkitError

#: the query whose row is drawn over the picture: [CLS]
QUERY = 0


def patch_grid(weights: np.ndarray, patches: tuple[int, int, int], row: int = QUERY) -> np.ndarray:
    """(rows, cols) the weights query ``row`` of ``weights`` (T, T) gives each patch;
    ``patches``: (rows, cols, the first patch's position)."""
    rows, cols, first = patches
    return np.asarray(weights)[row, first : first + rows * cols].reshape(rows, cols)


def _checked(result) -> tuple[int, int, int]:
    if result.picture is None or result.patches is None:
        raise AttnkitError(f"{result.model}: this result is not of an image model's patches")
    return result.patches


def picture_html(result) -> str:
    """The picture (grey) with each layer's [CLS] row (its heads' mean) over the patches, then
    the rollout's, as an inline view with a slider."""
    from attnkit.viz.inline import vision_html

    patches = _checked(result)
    heads = result.part().heads  # (L, H, T, T)
    steps = [
        {"attention": patch_grid(layer.mean(0), patches).round(5).tolist(), "token": f"layer {i}"}
        for i, layer in enumerate(heads, 1)
    ]
    rolled = patch_grid(result.rollout(), patches).round(5).tolist()
    steps.append({"attention": rolled, "token": "rollout"})
    grey = np.asarray(result.picture, dtype=np.float64).mean(axis=2) / 255.0  # (H, W)
    return vision_html(grey, steps, result.output)


def plot_patches(result, path: str | Path, layer=None, head=None, rollout: bool = False):
    """The picture with the [CLS] row of one map over its patches, beside that map: the mean of
    every layer and head, ``layer``/``head`` (from 1), or the ``rollout``. Returns the figure."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    from attnkit.viz.heads import map_title

    patches = _checked(result)
    result._check(None, layer, head)
    heads = result.part().heads
    if rollout:
        chosen, name = result.rollout(), "rollout"
    else:
        picked = heads[slice(None) if layer is None else [layer - 1]]
        picked = picked[:, slice(None) if head is None else [head - 1]]
        chosen, name = picked.mean(axis=(0, 1)), map_title(layer, head)
    grid = patch_grid(chosen, patches)
    figure = Figure(figsize=(11, 5))  # the object API, never pyplot (as attnkit.viz draws)
    FigureCanvasAgg(figure)
    left, right = figure.subplots(1, 2)
    height, width = result.picture.shape[:2]
    left.imshow(result.picture)
    left.imshow(grid, cmap="viridis", alpha=0.55, extent=(0, width, height, 0))
    left.set_title(f"[CLS] over the patches ({result.output})")
    left.axis("off")
    shown = right.imshow(chosen, cmap="viridis", vmin=0)
    right.set_title(f"{result.title()}, {name}", fontsize=9)
    right.set_xlabel("key position")
    right.set_ylabel("query position")
    figure.colorbar(shown, ax=right, fraction=0.046)
    figure.tight_layout()
    figure.savefig(path, dpi=110)
    return figure
