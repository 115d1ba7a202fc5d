"""One self-contained HTML page for a run: metrics, config, examples, attention.

The page needs nothing but itself: inline CSS, a small vanilla-JS script, the
records embedded as JSON in ``<script type="application/json">`` and, for the
first few examples, static PNG heatmaps as ``data:`` URIs so pictures show even
with scripts off. Clicking an example draws its attention as a table of
coloured cells; hovering a cell reads ``output <- source: weight``. A Transformer's example
(a record with ``heads``) gets a choice of the map: the mean, or any layer's head.
"""

from __future__ import annotations

import base64
import html
import io
import json
import math
from collections.abc import Mapping
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np

from attnkit.viz.heatmap import plot_heatmap
from attnkit.viz.records import FORMAT, VERSION, AttentionRecord

STATIC_PICTURES = 3  # examples that also get a PNG (pictures without JS)
RENDERER = "serve/static/heatmap.js"  # in the attnkit package; the page serves it too

_CSS = """
body{font:15px/1.45 system-ui,-apple-system,"Segoe UI",sans-serif;margin:2rem auto;
 max-width:1100px;padding:0 1rem;color:#1d1f23;background:#fcfcfd}
h1{font-size:1.6rem;margin:0 0 1rem}h2{font-size:1.15rem;margin:2rem 0 .6rem}
table.metrics{border-collapse:collapse}
.metrics td,.metrics th{padding:.25rem .9rem;border-bottom:1px solid #e3e5e8;text-align:left}
.metrics td.num{text-align:right;font-variant-numeric:tabular-nums}
pre{background:#f3f4f6;padding:.8rem;border-radius:6px;overflow:auto;font-size:13px}
.notes{white-space:pre-wrap}
ol.examples{padding-left:2.2rem}
.ex{margin:.4rem 0;padding:.5rem .7rem;border:1px solid #e3e5e8;border-radius:6px;
 background:#fff;cursor:pointer}
.ex:hover,.ex:focus{border-color:#8aa4d6;outline:none}
.ex .row{display:flex;gap:.6rem}.ex .k{color:#6b7280;min-width:5.5rem;flex:none}
.ex .v{font-family:ui-monospace,Menlo,Consolas,monospace;white-space:pre-wrap;word-break:break-all}
.mark{font-weight:600;margin-left:.4rem}.ok{color:#15803d}.bad{color:#b91c1c}
.score{color:#6b7280;font-size:.85rem;margin-left:.6rem}
.pic{margin-top:.5rem;cursor:default}.pic img{max-width:100%}
"""

# Opens an example's map, drawn by the shared renderer (heatmap.js, inlined before this).
_JS = """
(function () {
  var data = JSON.parse(document.getElementById("attnkit-data").textContent);
  // a Transformer's record holds heads[t][layer][head][s]: "" = the mean, "l,h" = one head
  function pick(rec, choice) {
    if (!choice) return rec.weights;
    var lh = choice.split(",");
    return rec.heads.map(function (step) { return step[+lh[0]][+lh[1]]; });
  }
  function headChoice(rec, draw) {
    var select = document.createElement("select");
    select.className = "heads";
    var options = [["", "mean of all layers and heads"]];
    rec.heads[0].forEach(function (heads, l) {
      heads.forEach(function (_, h) {
        options.push([l + "," + h, "layer " + (l + 1) + ", head " + (h + 1)]);
      });
    });
    options.forEach(function (o) {
      var option = document.createElement("option");
      option.value = o[0];
      option.textContent = o[1];
      select.appendChild(option);
    });
    select.addEventListener("change", function () { draw(select.value); });
    return select;
  }
  function heatmap(rec) {
    var box = document.createElement("div");
    box.className = "pic";
    var map = document.createElement("div");
    function draw(choice) {
      map.textContent = "";
      window.AttnkitHeatmap.draw(map, {rows: rec.output_tokens, cols: rec.source_tokens,
        weights: pick(rec, choice)}, {cell: 27, legend: true});
    }
    if (rec.heads) box.appendChild(headChoice(rec, draw));
    box.appendChild(map);
    draw("");
    box.addEventListener("click", function (e) { e.stopPropagation(); });
    return box;
  }
  function toggle(li) {
    var old = li.querySelector(".pic");
    var wasLive = old && old.getAttribute("data-live");
    if (old) old.remove();
    if (!wasLive) {
      var box = heatmap(data.records[+li.getAttribute("data-i")]);
      box.setAttribute("data-live", "1");
      li.appendChild(box);
    }
  }
  document.querySelectorAll(".ex").forEach(function (li) {
    li.addEventListener("click", function () { toggle(li); });
    li.addEventListener("keydown", function (e) {
      if (e.key === "Enter" || e.key === " ") { e.preventDefault(); toggle(li); }
    });
  });
})();
"""


def heatmap_js() -> str:
    """The heatmap renderer the explorer page serves (``attnkit/serve/static/heatmap.js``), to
    inline into a self-contained page: one renderer for the page and the reports."""
    text = (resources.files("attnkit") / RENDERER).read_text(encoding="utf-8")
    if "</script" in text.lower():  # would end the inline <script> early
        raise ValueError(f"{RENDERER} must not contain '</script'")
    return text


def write_report(
    path: str | Path,
    title: str,
    metrics: Mapping[str, Any],
    records: list[AttentionRecord],
    config: Mapping[str, Any] | None = None,
    notes: str | None = None,
    map_title: str | None = None,
) -> Path:
    """Write one self-contained HTML report and return its path (parent dirs created).

    ``metrics`` may nest (shown as dotted keys); ``config`` is shown
    pretty-printed in a collapsible block. Every record is listed and embedded;
    pass a sample, not a whole test set, to keep the page light. ``map_title``: what the
    records' weights are when they are not attention (e.g. "no attention: gradient saliency"),
    written on every picture and above the examples.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    esc = html.escape
    parts = page_head(title, _CSS, metrics, config, notes)
    parts.append(f"<h2>Examples ({len(records)})</h2>")
    if records:
        shown = f" ({esc(map_title)})" if map_title else ""
        parts.append(f"<p>Click an example to see where each output token looked{shown}.</p>")
    parts.append('<ol class="examples">')
    parts += [_example(i, r, map_title) for i, r in enumerate(records)]
    parts.append("</ol>")
    parts.append(
        f'<script type="application/json" id="attnkit-data">{_data_json(records)}</script>'
    )
    parts.append(f"<script>{heatmap_js()}\n{_JS}</script></body></html>")
    path.write_text("\n".join(parts) + "\n", encoding="utf-8")
    return path


def page_head(
    title: str,
    css: str,
    metrics: Mapping[str, Any],
    config: Mapping[str, Any] | None,
    notes: str | None,
) -> list[str]:
    """The opening of a report page: title, notes, the metrics table and the collapsible
    config, as HTML pieces to which the caller appends its examples."""
    esc = html.escape
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>{esc(title)}</title><style>{css}</style></head><body>",
        f"<h1>{esc(title)}</h1>",
    ]
    if notes:
        parts.append(f'<p class="notes">{esc(notes)}</p>')
    parts += ["<h2>Metrics</h2>", _metrics_table(metrics)]
    if config is not None:
        pretty = json.dumps(config, indent=2, ensure_ascii=False, default=str)
        parts.append(
            f'<details><summary><h2 style="display:inline">Config</h2></summary>'
            f"<pre>{esc(pretty)}</pre></details>"
        )
    return parts


def _data_json(records: list[AttentionRecord]) -> str:
    """The records as JSON that is safe inside <script>: no '<', '>' or '&' survive."""
    items = []
    for r in records:
        obj = r.to_json()
        for key, values in (("weights", r.weights), ("heads", r.heads)):
            if values is not None and not np.isfinite(values).all():  # JSON.parse refuses NaN
                obj[key] = np.round(
                    np.nan_to_num(values, nan=0.0, posinf=1.0, neginf=0.0), 5
                ).tolist()
        items.append(obj)
    return script_json({"format": FORMAT, "version": VERSION, "records": items})


def script_json(doc: Any) -> str:
    """``doc`` as JSON that is safe inside <script>: no '<', '>' or '&' survive."""
    text = json.dumps(doc, ensure_ascii=False)
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def _flatten(metrics: Mapping[str, Any], prefix: str = "") -> list[tuple[str, Any]]:
    rows = []
    for key, value in metrics.items():
        name = f"{prefix}{key}"
        if isinstance(value, Mapping):
            rows += _flatten(value, name + ".")
        else:
            rows.append((name, value))
    return rows


def _format_value(value: Any) -> tuple[str, bool]:
    """Display text and whether it is a number (right-aligned)."""
    if isinstance(value, bool) or value is None:
        return str(value), False
    if isinstance(value, (int, np.integer)):
        return f"{int(value):,}", True
    if isinstance(value, (float, np.floating)):
        v = float(value)
        return (f"{v:.4g}" if math.isfinite(v) and (abs(v) >= 1e-3 or v == 0) else f"{v:.3e}"), True
    return str(value), False


def _metrics_table(metrics: Mapping[str, Any]) -> str:
    rows = _flatten(metrics)
    if not rows:
        return "<p>(none)</p>"
    body = []
    for name, value in rows:
        text, numeric = _format_value(value)
        cls = ' class="num"' if numeric else ""
        body.append(f"<tr><th>{html.escape(name)}</th><td{cls}>{html.escape(text)}</td></tr>")
    return '<table class="metrics">' + "".join(body) + "</table>"


def _example(i: int, record: AttentionRecord, map_title: str | None = None) -> str:
    esc = html.escape
    mark = ""
    if record.correct is not None:
        mark = (
            '<span class="mark ok">✓ right</span>'
            if record.correct
            else '<span class="mark bad">✗ wrong</span>'
        )
    score = "" if record.score is None else f'<span class="score">score {record.score:.3f}</span>'

    def row(key: str, value: str, extra: str = "") -> str:
        return (
            f'<div class="row"><span class="k">{key}</span>'
            f'<span class="v">{esc(value)}</span>{extra}</div>'
        )

    rows = [row("source", record.source)]
    if record.reference is not None:
        rows.append(row("reference", record.reference))
    rows.append(row("output", record.output, mark + score))
    picture = ""
    if i < STATIC_PICTURES and record.weights.size:
        src = _png_data_uri(record, map_title)
        alt = esc(map_title or "attention heatmap", quote=True)
        picture = f'<div class="pic"><img alt="{alt}" src="{src}"></div>'
    return f'<li class="ex" data-i="{i}" tabindex="0">{"".join(rows)}{picture}</li>'


def _png_data_uri(record: AttentionRecord, map_title: str | None = None) -> str:
    label = "attention weight" if map_title is None else "weight"
    fig = plot_heatmap(record, title=map_title, value_label=label)
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=96)
    fig.clear()
    return "data:image/png;base64," + base64.b64encode(buffer.getvalue()).decode("ascii")
