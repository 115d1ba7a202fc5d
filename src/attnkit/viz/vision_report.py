"""One self-contained HTML page of a vision model's evaluation: metrics, then its errors.

The page looks like the seq2seq report (:mod:`attnkit.viz.report`, whose style and metrics
table it shares) and needs nothing but itself: each example's picture -- the attention overlays
or glimpse path of the model on that image -- is a PNG inlined as a ``data:`` URI, beside the
picture of its implicit attention (gradient saliency and Grad-CAM of the same answer,
``VisionExample.implicit``) where there is one. Where an
example also carries its steps (``VisionExample.view``), they are embedded as JSON and drawn
beside it, one overlay per step, by the heatmap renderer of the ``attnkit serve`` page (inlined,
:func:`attnkit.viz.report.heatmap_js`); hovering a region reads its weight. Errors come first,
then a few right answers for comparison.
"""

from __future__ import annotations

import base64
import html
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from attnkit.viz.report import _CSS, heatmap_js, page_head, script_json

_EXTRA_CSS = """
ol.images{padding-left:2.2rem}
.img{margin:.6rem 0;padding:.5rem .7rem;border:1px solid #e3e5e8;border-radius:6px;
 background:#fff}
.img img{max-width:100%;display:block;margin-top:.4rem}
.pair{display:flex;flex-wrap:wrap;gap:.8rem;align-items:flex-start}
.pair figure{margin:0;max-width:100%}
.pair figcaption{font-size:.85rem;color:#555}
.steps{margin-top:.4rem}
"""

# Draws each example's steps with the shared renderer (heatmap.js, inlined before this).
_JS = """
(function () {
  var views = JSON.parse(document.getElementById("attnkit-vision").textContent);
  document.querySelectorAll(".steps").forEach(function (box) {
    var view = views[+box.getAttribute("data-k")], scale = view.image.length > 40 ? 3 : 5;
    var readout = document.createElement("div");
    readout.className = "hm-readout";
    readout.textContent = "hover a region";
    box.appendChild(readout);
    view.steps.forEach(function (step, k) {
      var path = view.steps.slice(0, k + 1).map(function (s) { return s.glimpse; })
        .filter(function (g) { return g; });
      var title = "step " + (k + 1) + (step.token ? ": " + step.token : "");
      window.AttnkitHeatmap.overlay(box, view.image, step,
        {path: path, title: title, scale: scale, tooltip: readout});
    });
  });
})();
"""


@dataclass
class VisionExample:
    """One image of the split as the report shows it."""

    index: int  # in the split
    label: str
    answer: str
    right: bool
    picture: bytes | None = None  # PNG: where the model looked
    # {"image": (H, W) grey 0..1 nested lists, "steps": ModelKind.steps()}: drawn in the page
    view: dict | None = None
    implicit: bytes | None = None  # PNG: where the answer depends on the image (saliency)


def write_vision_report(
    path: str | Path,
    title: str,
    metrics: Mapping[str, Any],
    errors: list[VisionExample],
    right: list[VisionExample],
    config: Mapping[str, Any] | None = None,
    notes: str | None = None,
) -> Path:
    """Write the page (parent dirs created) and return its path: ``metrics`` as a table, the
    ``errors`` (each with its picture), then the ``right`` answers."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    parts = page_head(title, _CSS + _EXTRA_CSS, metrics, config, notes)
    views: list[dict] = []
    for heading, examples in (("Errors", errors), ("Right answers", right)):
        parts.append(
            f'<h2 id="{heading.split()[0].lower()}">{heading} ({len(examples)} shown)</h2>'
        )
        parts.append('<ol class="images">' + "".join(_example(e, views) for e in examples))
        parts.append("</ol>")
    if views:
        parts.append(
            f'<script type="application/json" id="attnkit-vision">{script_json(views)}</script>'
        )
        parts.append(f"<script>{heatmap_js()}\n{_JS}</script>")
    parts.append("</body></html>")
    path.write_text("\n".join(parts) + "\n", encoding="utf-8")
    return path


def _example(example: VisionExample, views: list[dict]) -> str:
    """One list item; its view (if any) is appended to ``views`` and drawn by the script."""
    esc = html.escape
    mark = (
        '<span class="mark ok">✓ right</span>'
        if example.right
        else '<span class="mark bad">✗ wrong</span>'
    )
    text = (
        f"image {example.index}: label <b>{esc(example.label)}</b>, "
        f"answer <b>{esc(example.answer)}</b>{mark}"
    )
    picture = ""
    if example.picture is not None:
        picture = _img(example.picture, f"where the model looked on image {example.index}")
    if example.implicit is not None:
        implicit = _img(example.implicit, f"implicit attention on image {example.index}")
        picture = (
            f'<div class="pair"><figure>{picture}<figcaption>attention</figcaption></figure>'
            f"<figure>{implicit}<figcaption>implicit attention (gradients)"
            "</figcaption></figure></div>"
        )
    if example.view is not None:
        picture += f'<div class="steps" data-k="{len(views)}"></div>'
        views.append(example.view)
    return f'<li class="img">{text}{picture}</li>'


def _img(png: bytes, alt: str) -> str:
    """An ``<img>`` holding ``png`` inline."""
    uri = "data:image/png;base64," + base64.b64encode(png).decode("ascii")
    return f'<img alt="{html.escape(alt)}" src="{uri}">'
