"""Attention drawn inline: the HTML a notebook shows for a result, and ``show()`` / ``plot()``.

Every result of the Python API that holds a map (a translation, an explanation, a classified
image, audio heard) renders itself with :func:`record_html`, :func:`vision_html` or
:func:`listening_html`: one self-contained
fragment -- the shared heatmap renderer (``viz/static/heatmap.js``, the one the explorer page
and report.html use), a small script of its own (``viz/static/inline.js``), the data as JSON,
and a static PNG of the same map that the script replaces (so a viewer that runs no scripts,
such as a notebook on a code-hosting site, still shows a picture). Nothing is fetched: the
fragment works offline and in an exported HTML file.

Hovering a cell reads ``output <- source: weight``; a Transformer's map has a choice of the
mean or any layer's head; a map with saliency beside it has an attention/saliency choice.
"""

from __future__ import annotations

import base64
import dataclasses
import html
import io
import json
import tempfile
import uuid
from pathlib import Path
from typing import Any

import numpy as np

from attnkit.viz.records import AttentionRecord

SCRIPT = "viz/static/inline.js"
LISTENING_SCRIPT = "viz/static/listening.js"
_STYLE = "font:14px system-ui,sans-serif;color:#1d1f23;margin:.3rem 0"


def _fragment(
    kind: str, payload: dict[str, Any], fallback_uri: str | None, script: str = SCRIPT
) -> str:
    """The HTML of one inline view: a container (holding the static picture ``fallback_uri``,
    when given), its data, the renderer and the view script (``script``)."""
    from attnkit.viz.report import heatmap_js, inline_js, script_json

    box = f"attnkit-{uuid.uuid4().hex[:12]}"
    data = script_json({"kind": kind, **payload})
    picture = ""
    if fallback_uri is not None:
        picture = (
            f'<img class="attnkit-static" alt="attention" src="{fallback_uri}" '
            'style="max-width:100%">'
        )
    return (
        f'<div class="attnkit-view" id="{box}" style="{_STYLE}">{picture}</div>\n'
        f'<script type="application/json" id="{box}-data">{data}</script>\n'
        f"<script>if (!window.AttnkitHeatmap) {{\n{heatmap_js()}\n}}</script>\n"
        f"<script>(function () {{ var id = {json.dumps(box)};\n{inline_js(script)}\n}})();</script>"
    )


def record_html(record: AttentionRecord, title: str | None = None, static: bool = True) -> str:
    """One output's map (its attention, every head of a Transformer's, its saliency where the
    record carries it) as a self-contained HTML fragment. ``static``: include a PNG fallback."""
    from attnkit.viz.report import png_data_uri

    payload = {"record": record.to_json(), "title": title}
    # a blank input has no map to picture
    still = png_data_uri(record, title) if static and record.weights.size else None
    return _fragment("seq2seq", payload, still)


def vision_html(
    image: np.ndarray, steps: list[dict], prediction: str, label: str | None = None
) -> str:
    """A classified image (``(H, W)`` in 0..1) with where the model looked, step by step (the
    ``steps`` of :meth:`attnkit.families.vision.kinds.ModelKind.steps`), and a step slider."""
    payload = {
        "image": np.round(np.asarray(image, dtype=np.float64), 4).tolist(),
        "steps": steps,
        "prediction": prediction,
        "label": label,
    }
    return _fragment("vision", payload, None)


def listening_payload(
    features: np.ndarray,
    weights: np.ndarray,
    outputs: list[str],
    stride: int,
    hop: int,
    wav: bytes,
    sample_rate: int,
    words: list[tuple[str, int, int]] | None = None,
    kind: str = "attention",
) -> dict[str, Any]:
    """The data of :func:`listening_html` as plain JSON types (the explorer's answer too):
    ``features`` (T, F), ``weights`` (U, S), the WAV as a ``data:`` URI."""
    return {
        "features": np.round(np.asarray(features, dtype=np.float64), 2).tolist(),  # (T, F)
        "weights": np.round(np.asarray(weights, dtype=np.float64), 4).tolist(),  # (U, S)
        "outputs": list(outputs),
        "stride": int(stride),
        "hop": int(hop),
        "rate": int(sample_rate),
        "words": [[str(w), int(a), int(b)] for w, a, b in words or ()],
        "weights_are": kind,
        "audio": "data:audio/wav;base64," + base64.b64encode(wav).decode("ascii"),
    }


def listening_html(payload: dict[str, Any]) -> str:
    """Audio heard and where each output listened (``payload`` of :func:`listening_payload`):
    the log-mel features (T, F), the weights (U, S) of each output over the listener's frames
    (``stride`` feature frames of ``hop`` samples each; CTC: ``weights_are="posterior"``), the
    gold words (label, first, stop feature frame), and an audio player of the WAV whose cursor
    follows the played frame and marks the output weighing it most
    (``viz/static/listening.js``). The PNG of :func:`attnkit.viz.spectrogram.plot_listening`
    stands in where scripts do not run."""
    from attnkit.viz.spectrogram import plot_listening

    fig = plot_listening(
        np.asarray(payload["features"]),
        np.asarray(payload["weights"]),
        payload["outputs"],
        payload["stride"],
        None,
        [tuple(w) for w in payload["words"]],
        payload["weights_are"],
    )
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=72)
    fig.clear()
    still = "data:image/png;base64," + base64.b64encode(buffer.getvalue()).decode("ascii")
    return _fragment("listening", payload, still, LISTENING_SCRIPT)


def show_html(fragment: str, name: str = "attnkit") -> Path | None:
    """Show ``fragment`` inline where IPython can display it (a notebook); elsewhere write it as
    a page to a temporary file and return that file's path (open it in a browser)."""
    try:
        from IPython import get_ipython
        from IPython.display import HTML, display
    except ImportError:
        get_ipython = None  # noqa: N806 - the name IPython gives it
    shell = get_ipython() if get_ipython is not None else None
    if shell is not None and getattr(shell, "kernel", None) is not None:
        display(HTML(fragment))
        return None
    page = f"<!doctype html><meta charset=utf-8><title>{html.escape(name)}</title>\n{fragment}"
    handle = tempfile.NamedTemporaryFile(
        "w", suffix=".html", prefix=f"{name}-", delete=False, encoding="utf-8"
    )
    with handle:
        handle.write(page)
    return Path(handle.name)


class ShowsRecord:
    """``to_dict()``, ``plot()``, ``show()`` and the notebook view for a result whose map is one
    :class:`AttentionRecord` (the class defines ``record()``)."""

    def record(self) -> AttentionRecord:  # pragma: no cover - every user defines it
        raise NotImplementedError

    def _view_title(self) -> str | None:
        return None

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON types: the record (tokens, weights, heads, saliency where present)."""
        return self.record().to_json()

    def plot(self, path_or_ax=None, layer: int | None = None, head: int | None = None):
        """Draw the map with matplotlib: into ``path_or_ax`` when it is an ``Axes``, to the file
        when it is a path (.png, .svg, .pdf), else onto a new figure. ``layer`` / ``head`` (from
        1, as on the command line) pick one of a Transformer's maps or their mean. A map with its
        gradient saliency (an explanation) is drawn beside it, on shared axes, in a file or a new
        figure (an ``Axes`` gets the attention alone). Returns the figure."""
        from attnkit.viz.heads import choose_map
        from attnkit.viz.heatmap import plot_heatmap, plot_side_by_side

        record = self.record()
        if layer is not None or head is not None:
            record = choose_map(record, layer, head)
        if path_or_ax is not None and not isinstance(path_or_ax, (str, Path)):
            return plot_heatmap(record, ax=path_or_ax, title=self._view_title())
        if record.saliency is None:
            return plot_heatmap(record, path=path_or_ax, title=self._view_title())
        salient = dataclasses.replace(record, weights=record.saliency, saliency=None, heads=None)
        return plot_side_by_side(record, salient, path_or_ax, titles=self._side_titles())

    def _side_titles(self) -> tuple[str, str]:
        """The titles of the attention and the saliency drawn side by side."""
        method = getattr(self, "method", None)
        return ("attention", f"saliency ({method})" if method else "saliency")

    def show(self) -> Path | None:
        """The interactive map: inline in a notebook, else a page in a temporary file (its path
        is returned)."""
        return show_html(self._repr_html_())

    def _repr_html_(self) -> str:
        return record_html(self.record(), self._view_title())
