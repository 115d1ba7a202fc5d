"""What a vision model's ``classify`` returns: :class:`Classification`, with ``to_dict()``,
``plot(path_or_ax)`` and ``show()`` / ``_repr_html_`` (an inline view in a notebook)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from attnkit.viz.inline import show_html, vision_html


@dataclass
class Classification:
    """What a vision model answered for one image and where it looked.

    ``image``: ``(H, W)`` in 0..1. ``steps``: one dict per step, ``{"attention": (h, w) nested
    lists | None, "glimpse": {"x", "y", "size"} | None, "token": str | None}`` (a reader's
    per-digit maps, the attention-pooling map, RAM's glimpses). ``probs``: the class
    probabilities of a classifier (None for a reader)."""

    prediction: str
    probs: list[float] | None
    image: np.ndarray
    steps: list[dict]
    label: str | None = None
    figure_of: Any = field(default=None, repr=False)  # () -> matplotlib Figure, set by the model

    @property
    def attention(self) -> list[np.ndarray]:
        """Each step's attention map ``(h, w)`` (empty for RAM, whose steps are glimpses)."""
        return [np.asarray(s["attention"]) for s in self.steps if s.get("attention") is not None]

    @property
    def glimpses(self) -> list[dict]:
        """RAM's glimpse path: ``{"x", "y"}`` centres in -1..1 and ``size`` in pixels."""
        return [s["glimpse"] for s in self.steps if s.get("glimpse") is not None]

    def to_dict(self) -> dict[str, Any]:
        return {
            "prediction": self.prediction,
            "probs": self.probs,
            "label": self.label,
            "image": np.round(self.image, 4).tolist(),
            "steps": self.steps,
        }

    def plot(self, path_or_ax=None):
        """The steps as one figure (the picture ``attnkit plot`` draws), saved to a path when one
        is given; into an ``Axes``: the image with the first step's attention."""
        if path_or_ax is not None and not isinstance(path_or_ax, str | Path):
            return self._plot_into(path_or_ax)
        fig = self.figure_of()
        if path_or_ax is not None:
            from attnkit.viz.visual import save_figure

            save_figure(fig, path_or_ax)
        return fig

    def _plot_into(self, ax):
        from attnkit.viz.visual import upsample_map

        ax.imshow(self.image, cmap="gray")
        maps = self.attention
        if maps:
            h, w = self.image.shape
            ax.imshow(upsample_map(maps[0], h, w), cmap="viridis", alpha=0.5)
        ax.set_title(f"pred {self.prediction}")
        ax.axis("off")
        return ax.figure

    def show(self) -> Path | None:
        return show_html(self._repr_html_())

    def _repr_html_(self) -> str:
        return vision_html(self.image, self.steps, self.prediction, self.label)
