"""One self-contained HTML page for a run: metrics, config, examples, attention.

The page needs nothing but itself: inline CSS, a small vanilla-JS script
(``viz/static/report.js``), the records embedded as JSON in
``<script type="application/json">`` and, for the first few examples, static PNG heatmaps
as ``data:`` URIs so pictures show even with scripts off. Clicking an example draws its
attention as a table of coloured cells; hovering a cell reads ``output <- source: weight``.
A Transformer's example (a record with ``heads``) gets a choice of the map: the mean, any
layer's head, or its attention rollout and flow (a record with ``rollout`` and ``flow``).

The wrong examples come first, each with its reference beside its output (and beside its
map); controls filter the list (all / wrong / right) and sort it (as decoded, model score,
chrF, source length), and the page counts the errors of the whole evaluation (:class:`Tally`).
A translation's example shows its sentence chrF where another would say "wrong".
"""

from __future__ import annotations

import base64
import html
import io
import json
import math
from collections.abc import Mapping
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np
import yaml

from attnkit.viz import metric_names
from attnkit.viz.heatmap import plot_heatmap
from attnkit.viz.records import FORMAT, VERSION, AttentionRecord

STATIC_PICTURES = 3  # examples that also get a PNG (pictures without JS)
RENDERER = "viz/static/heatmap.js"  # in the attnkit package; the explorer page serves it too
SCRIPT = "viz/static/report.js"  # the report's own script, inlined after the renderer

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
.ex .v{font-family:ui-monospace,Menlo,Consolas,monospace;white-space:pre-wrap;
 overflow-wrap:break-word}
.mark{font-weight:600;margin-left:.4rem}.ok{color:#15803d}.bad{color:#b91c1c}
.score{color:#6b7280;font-size:.85rem;margin-left:.6rem}
.pic{margin-top:.5rem;cursor:default;display:flex;gap:1rem;align-items:flex-start;
 flex-wrap:wrap}.pic img{max-width:100%}
.controls{display:flex;gap:1.2rem;align-items:center;flex-wrap:wrap;margin:.4rem 0 .8rem}
.tally{font-weight:600}.idx{color:#6b7280;font-size:.85rem;margin-left:.6rem;flex:none}
.ex[hidden]{display:none}.ex[data-status="wrong"]{border-left:3px solid #b91c1c}
.pair{display:flex;gap:0 1.2rem;flex-wrap:wrap}.pair .row{flex:1 1 18rem}
.beside{max-width:24rem;padding:.4rem .6rem;background:#fef2f2;border-radius:6px}
.beside .v{font-family:ui-monospace,Menlo,Consolas,monospace;white-space:pre-wrap;
 overflow-wrap:break-word;margin-bottom:.3rem}.beside .k{color:#6b7280}
"""


@dataclass(frozen=True)
class Tally:
    """How many of all the evaluated examples are wrong (the page may show only some)."""

    wrong: int
    total: int


def heatmap_js() -> str:
    """The heatmap renderer the explorer page serves (``attnkit/viz/static/heatmap.js``), to
    inline into a self-contained page: one renderer for the page and the reports."""
    return inline_js(RENDERER)


def inline_js(name: str) -> str:
    """A script of the attnkit package, checked to be safe inside an inline <script>."""
    text = (resources.files("attnkit") / name).read_text(encoding="utf-8")
    if "</script" in text.lower():  # would end the inline <script> early
        raise ValueError(f"{name} must not contain '</script'")
    return text


def write_report(
    path: str | Path,
    title: str,
    metrics: Mapping[str, Any],
    records: list[AttentionRecord],
    config: Mapping[str, Any] | None = None,
    notes: str | None = None,
    map_title: str | None = None,
    tally: Tally | None = None,
) -> Path:
    """Write one self-contained HTML report and return its path (parent dirs created).

    ``metrics`` may nest (shown as dotted keys); ``config`` is shown
    pretty-printed in a collapsible block. Every record is listed and embedded;
    pass a sample, not a whole test set, to keep the page light. The wrong records are listed
    first, the others in the order given. ``map_title``: what the
    records' weights are when they are not attention (e.g. "no attention: gradient saliency"),
    written on every picture and above the examples. ``tally``: the errors of the whole
    evaluation the records were chosen from, counted above the list ("12 wrong of 400").
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    esc = html.escape
    style = _Style.of(records, map_title)
    parts = page_head(title, _CSS, metrics, config, notes)
    parts.append(f"<h2>Examples ({len(records)})</h2>")
    if records:
        shown = f" ({esc(map_title)})" if map_title else ""
        parts.append(f"<p>Click an example to see where each output token looked{shown}.</p>")
        parts.append(_controls(records, tally, style))
    # wrong first, the rest as given (a stable sort); data-i still indexes the embedded records
    listed = sorted(range(len(records)), key=lambda i: records[i].correct is not False)
    parts.append('<ol class="examples">')
    parts += [_example(i, n, records[i], style) for n, i in enumerate(listed)]
    parts.append("</ol>")
    parts.append(
        f'<script type="application/json" id="attnkit-data">{_data_json(records)}</script>'
    )
    parts.append(f"<script>{heatmap_js()}\n{inline_js(SCRIPT)}</script></body></html>")
    path.write_text("\n".join(parts) + "\n", encoding="utf-8")
    return path


@dataclass(frozen=True)
class _Style:
    """How the page names its examples: a translation is "not identical" to its reference
    rather than "wrong" (its chrF says how far), and what the maps are (``map_title``)."""

    wrong: str = "wrong"
    right: str = "right"
    translation: bool = False
    map_title: str | None = None

    @classmethod
    def of(cls, records: list[AttentionRecord], map_title: str | None) -> _Style:
        if any(r.chrf is not None for r in records):
            return cls("not identical", "identical", True, map_title)
        return cls(map_title=map_title)


def _controls(records: list[AttentionRecord], tally: Tally | None, style: _Style) -> str:
    """The counts, the filter (all / wrong / right) and the sort of the examples."""
    wrong = sum(r.correct is False for r in records)
    right = sum(r.correct is True for r in records)
    if tally is None:
        counts = f"{wrong:,} {style.wrong} of {len(records):,} shown"
    else:
        counts = f"{tally.wrong:,} {style.wrong} of {tally.total:,}"
        if wrong < tally.wrong:
            counts += f" (the first {wrong:,} shown)"
    filters = [("all", "all", len(records)), ("wrong", style.wrong, wrong)]
    filters.append(("right", style.right, right))
    sorts = [("order", "as decoded"), ("score", "model score, lowest first")]
    if style.translation:
        sorts.append(("chrf", "chrF, lowest first"))
    sorts.append(("len", "source length, shortest first"))

    def select(name: str, label: str, options: list[tuple[str, str]]) -> str:
        body = "".join(f'<option value="{v}">{html.escape(text)}</option>' for v, text in options)
        return f'<label>{label} <select id="ex-{name}">{body}</select></label>'

    shown = [(v, f"{text} ({n:,})") for v, text, n in filters]
    return (
        f'<div class="controls"><span class="tally">{html.escape(counts)}</span>'
        f"{select('filter', 'show', shown)}{select('sort', 'sort', sorts)}"
        f'<span id="ex-showing">showing {len(records):,} of {len(records):,}</span></div>'
    )


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
        pretty = yaml.safe_dump(
            json.loads(json.dumps(config, default=str)), sort_keys=False, allow_unicode=True
        )
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


def _flatten(metrics: Mapping[str, Any], prefix: tuple[str, ...] = ()) -> list:
    """(path of keys, value) of every leaf, bookkeeping keys left out."""
    rows = []
    for key, value in metrics.items():
        path = (*prefix, str(key))
        if metric_names.hidden(path):
            continue
        if isinstance(value, Mapping):
            rows += _flatten(value, path)
        else:
            rows.append((path, value))
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
    for path, value in rows:
        text, numeric = _format_value(value)
        text = metric_names.shown_value(path, text) if numeric else text
        cls = ' class="num"' if numeric else ""
        name = html.escape(metric_names.row_name(path))
        body.append(f"<tr><th>{name}</th><td{cls}>{html.escape(text)}</td></tr>")
    return '<table class="metrics">' + "".join(body) + "</table>"


def _example(i: int, order: int, record: AttentionRecord, style: _Style) -> str:
    """Record ``i``, listed ``order``-th: a wrong one shows its reference beside its output."""
    esc = html.escape
    status = {True: "right", False: "wrong", None: "none"}[record.correct]
    mark = ""
    if status == "right":
        mark = f'<span class="mark ok">✓ {style.right}</span>'
    elif status == "wrong":
        what = f"chrF {record.chrf:.1f}" if record.chrf is not None else f"✗ {style.wrong}"
        mark = f'<span class="mark bad">{what}</span>'
    score = "" if record.score is None else f'<span class="score">score {record.score:.3f}</span>'

    def row(key: str, value: str, extra: str = "") -> str:
        return (
            f'<div class="row"><span class="k">{key}</span>'
            f'<span class="v">{esc(value)}</span>{extra}</div>'
        )

    where = "" if record.index is None else f'<span class="idx">#{record.index}</span>'
    rows = [row("source", record.source, where)]
    output = row("output", record.output, mark + score)
    if status == "wrong" and record.reference is not None:
        rows.append(f'<div class="pair">{output}{row("reference", record.reference)}</div>')
    else:
        rows += [row("reference", record.reference)] if record.reference is not None else []
        rows.append(output)
    picture = ""
    if order < STATIC_PICTURES and record.weights.size:
        src = png_data_uri(record, style.map_title)
        alt = esc(style.map_title or "attention heatmap", quote=True)
        aside = ""
        if status == "wrong" and record.reference is not None:  # beside the picture, not above
            rows[-1] = output
            aside = f'<aside class="beside"><div class="k">reference</div>{_v(record.reference)}'
            aside += "</aside>"
        picture = f'<div class="pic"><img alt="{alt}" src="{src}">{aside}</div>'
    return (
        f'<li class="ex" data-i="{i}" data-order="{order}" data-status="{status}"'
        f'{_sort_keys(record)} tabindex="0">{"".join(rows)}{picture}</li>'
    )


def _v(text: str) -> str:
    return f'<div class="v">{html.escape(text)}</div>'


def _sort_keys(record: AttentionRecord) -> str:
    """The numbers the page sorts by, as data- attributes (an unknown score is left out)."""
    keys = {"len": len(record.source_tokens), "chrf": record.chrf}
    if record.score is not None and math.isfinite(record.score):
        keys["score"] = record.score
    return "".join(f' data-{k}="{v}"' for k, v in keys.items() if v is not None)


def png_data_uri(record: AttentionRecord, map_title: str | None = None) -> str:
    """The record's heatmap as a PNG ``data:`` URI: the picture a page shows without scripts."""
    label = "attention weight" if map_title is None else "weight"
    fig = plot_heatmap(record, title=map_title, value_label=label)
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=96)
    fig.clear()
    return "data:image/png;base64," + base64.b64encode(buffer.getvalue()).decode("ascii")
