"""Pictures of visual attention: attention maps over the image, glimpse paths.

Pure functions: arrays and titles in, a :class:`~matplotlib.figure.Figure`
or files out. Built on matplotlib's object API (``Figure`` +
``FigureCanvasAgg``), never pyplot, so nothing global changes; GIFs are
assembled with Pillow from rendered frames.

* :func:`attention_grid` / :func:`attention_gif` -- soft attention: one
  panel (or frame) per output step, the step's attention map upsampled and
  laid over the image.
* :func:`glimpse_grid` / :func:`glimpse_gif` -- hard attention: one panel
  (or frame) per glimpse, the path so far and the squares of every scale of
  the current glimpse.
* :func:`panel_grid` -- any rows of such panels, side by side (the attention beside the
  gradient saliency and Grad-CAM of the same image, :mod:`attnkit.families.vision.explain`).
* :func:`save_figure` -- a figure as PNG or SVG.

Images are ``(H, W)`` arrays (uint8 0-255 or float 0-1), shown in grey.
"""

from __future__ import annotations

import math
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from matplotlib import colormaps
from matplotlib.axes import Axes
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.patches import Rectangle
from PIL import Image

from attnkit.errors import ConfigError

_PANEL_INCHES = 2.2
_MAX_WIDTH_INCHES = 14.0
_SCALE_COLOURS = ("#ff3b30", "#ffcc00", "#34c759", "#0a84ff")  # finest scale first


def _as_float_image(image) -> np.ndarray:
    image = np.asarray(image, dtype=np.float64)
    if image.ndim == 3 and image.shape[0] == 1:
        image = image[0]
    if image.ndim != 2:
        raise ValueError(f"expected a grey image (H, W), got shape {image.shape}")
    return image / 255.0 if image.max(initial=0.0) > 1.0 else image


def upsample_map(weights, height: int, width: int) -> np.ndarray:
    """A ``(h, w)`` attention map stretched to ``(height, width)`` (bilinear), same total shape as
    the image."""
    weights = np.asarray(weights, dtype=np.float32)
    if weights.shape == (height, width):
        return weights.astype(np.float64)
    resized = Image.fromarray(weights, mode="F").resize((width, height), Image.BILINEAR)
    return np.asarray(resized, dtype=np.float64)


def _new_figure(
    panels: int, cols: int | None, aspect: float, suptitle: str | None
) -> tuple[Figure, list[Axes]]:
    """A grid of ``panels`` axes for images ``aspect`` (width / height) wide, at most ~14 inches
    across."""
    width = _PANEL_INCHES * min(max(aspect, 0.5), 3.0)
    cols = cols or max(1, min(panels, 6, int(_MAX_WIDTH_INCHES // width)))
    rows = math.ceil(panels / cols)
    height = _PANEL_INCHES * width / (_PANEL_INCHES * max(aspect, 0.5)) + 0.35
    fig = Figure(figsize=(cols * width, rows * height + (0.4 if suptitle else 0.0)), dpi=100)
    FigureCanvasAgg(fig)
    axes = [fig.add_subplot(rows, cols, i + 1) for i in range(rows * cols)]
    for ax in axes:
        ax.set_axis_off()
    if suptitle:
        fig.suptitle(suptitle, fontsize=11)
    return fig, axes[:panels]


def _draw_attention(ax: Axes, image: np.ndarray, weights, title: str | None, alpha: float) -> None:
    ax.imshow(image, cmap="gray", vmin=0.0, vmax=1.0, interpolation="nearest")
    if weights is not None:
        heat = upsample_map(weights, *image.shape)
        top = heat.max()
        heat = np.clip(heat / top, 0.0, 1.0) if top > 0 else heat
        rgba = colormaps["jet"](heat)  # (H, W, 4)
        rgba[..., 3] = alpha * heat  # transparent where the model does not look
        ax.imshow(rgba, interpolation="bilinear")
    if title:
        ax.set_title(title, fontsize=10)
    ax.set_axis_off()


def attention_grid(
    image,
    maps: Sequence | np.ndarray,
    titles: Sequence[str] | None = None,
    path: str | Path | None = None,
    cols: int | None = None,
    alpha: float = 0.7,
    show_image: bool = True,
    suptitle: str | None = None,
) -> Figure:
    """The image (first panel, if ``show_image``) and one overlay per map ``(T, h, w)``.

    Each map is normalised to its own maximum for display (the weights of a
    map sum to 1, so small maps would otherwise be invisible).
    """
    image = _as_float_image(image)
    maps = np.asarray(maps)
    titles = list(titles) if titles is not None else [f"step {t + 1}" for t in range(len(maps))]
    panels = [(None, "input")] if show_image else []
    panels += list(zip(maps, titles))
    fig, axes = _new_figure(len(panels), cols, image.shape[1] / image.shape[0], suptitle)
    for ax, (weights, title) in zip(axes, panels):
        _draw_attention(ax, image, weights, title, alpha)
    fig.tight_layout()
    if path is not None:
        save_png(fig, path)
    return fig


def render(fig: Figure) -> Image.Image:
    """A figure as an RGB Pillow image."""
    canvas = fig.canvas if isinstance(fig.canvas, FigureCanvasAgg) else FigureCanvasAgg(fig)
    canvas.draw()
    return Image.fromarray(np.asarray(canvas.buffer_rgba())[..., :3].copy())


def save_png(fig: Figure, path: str | Path) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    render(fig).save(path, format="PNG")
    return path


FIGURE_SUFFIXES = (".png", ".svg")
"""The file types :func:`save_figure` writes (a GIF is an animation: :func:`save_gif`)."""


def save_figure(fig: Figure, path: str | Path) -> Path:
    """``fig`` as a PNG or an SVG (vector: sharp at any zoom), by the suffix of ``path``."""
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix not in FIGURE_SUFFIXES:
        raise ValueError(f"{path}: a figure is saved as {' or '.join(FIGURE_SUFFIXES)}")
    if suffix == ".png":
        return save_png(fig, path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, format="svg")
    return path


def save_gif(frames: Sequence[Image.Image], path: str | Path, duration_ms: int = 800) -> Path:
    """Frames -> an animated GIF that loops forever."""
    if not frames:
        raise ValueError("a GIF needs at least one frame")
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    palette = [f.convert("P", palette=Image.ADAPTIVE, colors=255) for f in frames]
    palette[0].save(
        path,
        format="GIF",
        save_all=True,
        append_images=palette[1:],
        duration=duration_ms,
        loop=0,
        disposal=2,
        optimize=False,
    )
    return path


def _single_frame(draw, aspect: float, suptitle: str | None = None) -> Image.Image:
    width = 3.2 * min(max(aspect, 0.6), 4.0)
    fig = Figure(
        figsize=(width, width / max(aspect, 0.6) + 0.5 + (0.3 if suptitle else 0.0)), dpi=100
    )
    FigureCanvasAgg(fig)
    ax = fig.add_subplot()
    draw(ax)
    if suptitle:
        fig.suptitle(suptitle, fontsize=11)
    fig.tight_layout()
    return render(fig)


def attention_gif(
    image,
    maps: Sequence | np.ndarray,
    titles: Sequence[str] | None,
    path: str | Path,
    duration_ms: int = 800,
    alpha: float = 0.7,
    suptitle: str | None = None,
) -> Path:
    """One frame per attention map ``(T, h, w)``, preceded by the plain image."""
    image = _as_float_image(image)
    maps = np.asarray(maps)
    titles = list(titles) if titles is not None else [f"step {t + 1}" for t in range(len(maps))]
    aspect = image.shape[1] / image.shape[0]
    frames = [
        _single_frame(lambda ax: _draw_attention(ax, image, None, "input", alpha), aspect, suptitle)
    ]
    for weights, title in zip(maps, titles):
        draw = lambda ax, w=weights, t=title: _draw_attention(ax, image, w, t, alpha)  # noqa: E731
        frames.append(_single_frame(draw, aspect, suptitle))
    return save_gif(frames, path, duration_ms)


def _draw_glimpse(
    ax: Axes,
    image: np.ndarray,
    centres: np.ndarray,
    boxes: np.ndarray,
    step: int,
    title: str | None,
):
    """Image, path through the first ``step + 1`` centres, squares of glimpse ``step``."""
    ax.imshow(image, cmap="gray", vmin=0.0, vmax=1.0, interpolation="nearest")
    seen = centres[: step + 1]
    ax.plot(seen[:, 0], seen[:, 1], "-", color="#0a84ff", linewidth=1.2, alpha=0.8)
    ax.plot(seen[:-1, 0], seen[:-1, 1], "o", color="#0a84ff", markersize=3)
    ax.plot(seen[-1, 0], seen[-1, 1], "o", color=_SCALE_COLOURS[0], markersize=4)
    for k, (x0, y0, size) in enumerate(boxes[step]):
        colour = _SCALE_COLOURS[k % len(_SCALE_COLOURS)]
        # pixel (i, j) covers [j - 0.5, j + 0.5] in imshow coordinates
        ax.add_patch(
            Rectangle((x0 - 0.5, y0 - 0.5), size, size, fill=False, edgecolor=colour, linewidth=1.5)
        )
    ax.set_xlim(-0.5, image.shape[1] - 0.5)
    ax.set_ylim(image.shape[0] - 0.5, -0.5)
    if title:
        ax.set_title(title, fontsize=10)
    ax.set_axis_off()


def _glimpse_inputs(image, centres, boxes, titles):
    image = _as_float_image(image)
    centres = np.asarray(centres, dtype=np.float64)
    boxes = np.asarray(boxes, dtype=np.float64)
    if (
        centres.ndim != 2
        or centres.shape[1] != 2
        or boxes.shape[:1] != centres.shape[:1]
        or boxes.shape[-1] != 3
    ):
        raise ValueError(
            f"expected centres (G, 2) and boxes (G, k, 3), got {centres.shape} and {boxes.shape}"
        )
    titles = (
        list(titles) if titles is not None else [f"glimpse {g + 1}" for g in range(len(centres))]
    )
    return image, centres, boxes, titles


def glimpse_grid(
    image,
    centres,
    boxes,
    titles: Sequence[str] | None = None,
    path: str | Path | None = None,
    cols: int | None = None,
    suptitle: str | None = None,
) -> Figure:
    """One panel per glimpse: ``centres (G, 2)`` pixel ``(x, y)``, ``boxes (G, k, 3)`` rows
    ``(x0, y0, size)``."""
    image, centres, boxes, titles = _glimpse_inputs(image, centres, boxes, titles)
    fig, axes = _new_figure(len(centres), cols, image.shape[1] / image.shape[0], suptitle)
    for g, ax in enumerate(axes):
        _draw_glimpse(ax, image, centres, boxes, g, titles[g])
    fig.tight_layout()
    if path is not None:
        save_png(fig, path)
    return fig


def glimpse_gif(
    image,
    centres,
    boxes,
    titles: Sequence[str] | None,
    path: str | Path,
    duration_ms: int = 800,
    suptitle: str | None = None,
) -> Path:
    """The glimpse path as an animation, one frame per glimpse."""
    image, centres, boxes, titles = _glimpse_inputs(image, centres, boxes, titles)
    aspect = image.shape[1] / image.shape[0]
    frames = [
        _single_frame(
            lambda ax, g=g: _draw_glimpse(ax, image, centres, boxes, g, titles[g]), aspect, suptitle
        )
        for g in range(len(centres))
    ]
    return save_gif(frames, path, duration_ms)


@dataclass
class Panel:
    """One panel of :func:`panel_grid`: a map laid over the image, or a glimpse path."""

    title: str
    weights: np.ndarray | None = None  # (h, w) or (H, W), each drawn to its own maximum
    # (centres (G, 2), boxes (G, k, 3), the glimpse whose squares are drawn): a glimpse path
    glimpse: tuple[np.ndarray, np.ndarray, int] | None = None


def panel_grid(
    image, rows: Sequence[Sequence[Panel | None]], suptitle: str | None = None, alpha: float = 0.7
) -> Figure:
    """Rows of panels over one image, a column for each position in the longest row (a None or
    missing panel is left blank): e.g. one row per output step, its attention map beside its
    saliency."""
    image = _as_float_image(image)
    cols = max((len(row) for row in rows), default=1)
    cells = [panel for row in rows for panel in [*row, *[None] * (cols - len(row))]]
    fig, axes = _new_figure(len(cells), cols, image.shape[1] / image.shape[0], suptitle)
    for ax, panel in zip(axes, cells):
        if panel is None:
            continue
        if panel.glimpse is not None:
            centres, boxes, step = panel.glimpse
            centres, boxes = np.asarray(centres, np.float64), np.asarray(boxes, np.float64)
            _draw_glimpse(ax, image, centres, boxes, step, panel.title)
        else:
            _draw_attention(ax, image, panel.weights, panel.title, alpha)
    fig.tight_layout()
    return fig


def picture_paths(out: str | Path, stem: str) -> list[Path]:
    """The files a picture goes to: ``out`` itself (.png, .svg, .gif), or ``stem.png`` and
    ``stem.gif`` in the directory ``out`` (a string ending in a separator, or one that exists)."""
    path = Path(out)
    if str(out).endswith(("/", os.sep)) or path.is_dir():
        return [path / f"{stem}.png", path / f"{stem}.gif"]
    if path.suffix.lower() in (*FIGURE_SUFFIXES, ".gif"):
        return [path]
    raise ConfigError(
        f"-o {out}: name a .png, .svg or .gif file, or a directory (end it with {os.sep})"
    )
