"""One self-contained HTML page of a vision model's evaluation: metrics, then its errors.

The page looks like the seq2seq report (:mod:`attnkit.viz.report`, whose style and metrics
table it shares) and needs nothing but itself: each example's picture -- the attention overlays
or glimpse path of the model on that image -- is a PNG inlined as a ``data:`` URI. Errors come
first, then a few right answers for comparison.
"""

from __future__ import annotations

import base64
import html
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from attnkit.viz.report import _CSS, page_head

_EXTRA_CSS = """
ol.images{padding-left:2.2rem}
.img{margin:.6rem 0;padding:.5rem .7rem;border:1px solid #e3e5e8;border-radius:6px;
 background:#fff}
.img img{max-width:100%;display:block;margin-top:.4rem}
"""


@dataclass
class VisionExample:
    """One image of the split as the report shows it."""

    index: int  # in the split
    label: str
    answer: str
    right: bool
    picture: bytes | None = None  # PNG: where the model looked


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
    for heading, examples in (("Errors", errors), ("Right answers", right)):
        parts.append(
            f'<h2 id="{heading.split()[0].lower()}">{heading} ({len(examples)} shown)</h2>'
        )
        parts.append('<ol class="images">' + "".join(map(_example, examples)) + "</ol>")
    parts.append("</body></html>")
    path.write_text("\n".join(parts) + "\n", encoding="utf-8")
    return path


def _example(example: VisionExample) -> str:
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
        uri = "data:image/png;base64," + base64.b64encode(example.picture).decode("ascii")
        picture = f'<img alt="where the model looked on image {example.index}" src="{uri}">'
    return f'<li class="img">{text}{picture}</li>'
