/*
 * The one heatmap renderer of attnkit: attention (or saliency) maps as tables of coloured
 * cells, and visual attention over an image. The explorer page (attnkit serve) loads this file
 * from /static/heatmap.js; report.html inlines the same file (attnkit.viz.report), so both draw
 * alike. A plain script without imports; it defines window.AttnkitHeatmap.
 *
 * A map is {rows: [str] (T output tokens), cols: [str] (S source tokens), weights: [[number]]
 * (T x S), gold: [[i, j], ...] | null (cells outlined), title: str | null}.
 */
(function (root) {
  "use strict";

  // the key under a map with outlined cells (opts.goldLabel: a view's own words)
  var GOLD_LABEL = "outlined: gold, where the task says the output comes from";

  // Viridis at 9 evenly spaced stops, interpolated linearly.
  var VIRIDIS = [[68, 1, 84], [71, 44, 122], [59, 81, 139], [44, 113, 142], [33, 144, 141],
    [39, 173, 129], [92, 200, 99], [170, 220, 50], [253, 231, 37]];

  var CSS = [
    ".hm-box{display:inline-block;vertical-align:top;margin:0 1rem .6rem 0}",
    ".hm-title{font:600 13px system-ui,sans-serif;margin:.2rem 0}",
    ".hm-readout{height:1.4rem;margin:.2rem 0;font:13px ui-monospace,Menlo,Consolas,monospace}",
    "table.hm{border-collapse:collapse;font:12px ui-monospace,Menlo,Consolas,monospace}",
    ".hm th{font-weight:normal;padding:0 .3rem;color:#374151;white-space:pre}",
    ".hm thead th{writing-mode:vertical-rl;transform:rotate(180deg);text-align:left;",
    "padding:.3rem 0}",
    ".hm tbody th{text-align:right}",
    ".hm th.hm-group{writing-mode:horizontal-tb;transform:none;text-align:left;",
    "font-weight:600;padding:.5rem 0 .1rem}",
    ".hm td.hm-cell{padding:0;text-align:center;font-size:10px;box-sizing:border-box}",
    ".hm td.hm-cell:hover{outline:2px solid #f97316;outline-offset:-2px}",
    ".hm td.hm-gold{box-shadow:inset 0 0 0 2px #ef4444}",
    ".hm-legend{display:flex;align-items:center;gap:.3rem;font:11px system-ui,sans-serif;",
    "color:#4b5563;margin:.2rem 0}",
    ".hm-legend span.bar{display:inline-block;width:120px;height:10px;border-radius:2px}",
    ".hm-gold-key{display:flex;align-items:center;gap:.3rem;font:11px system-ui,sans-serif;",
    "color:#4b5563;margin:.2rem 0}",
    ".hm-gold-key span.swatch{display:inline-block;width:14px;height:14px;",
    "box-shadow:inset 0 0 0 2px #ef4444;background:#f3f4f6}",
    ".ov{position:relative;display:inline-block;line-height:0}",
    ".ov canvas{image-rendering:pixelated;display:block}",
    ".ov img{display:block}",
    ".ov-cell{position:absolute;box-sizing:border-box}",
    ".ov-cell:hover{outline:2px solid #f97316;outline-offset:-2px}",
    ".ov-glimpses{position:absolute;left:0;top:0;pointer-events:none}"
  ].join("\n");

  function injectStyle() {
    if (typeof document === "undefined" || document.getElementById("attnkit-hm-style")) return;
    var style = document.createElement("style");
    style.id = "attnkit-hm-style";
    style.textContent = CSS;
    document.head.appendChild(style);
  }

  /** The colour of weight w on a scale 0..vmax: {css, dark} (dark: write on it in white). */
  function colour(w, vmax) {
    var v = vmax > 0 ? w / vmax : 0;
    if (!isFinite(v)) v = 0;
    var x = Math.min(Math.max(v, 0), 1) * (VIRIDIS.length - 1);
    var i = Math.min(Math.floor(x), VIRIDIS.length - 2), f = x - i;
    var c = [0, 1, 2].map(function (k) {
      return Math.round(VIRIDIS[i][k] + f * (VIRIDIS[i + 1][k] - VIRIDIS[i][k]));
    });
    var luma = 0.299 * c[0] + 0.587 * c[1] + 0.114 * c[2];
    return {css: "rgb(" + c.join(",") + ")", dark: luma < 128, rgb: c};
  }

  /** A token as text that shows: the empty token, spaces, newlines and tabs made visible. A
   * single space between two other characters reads as one (a sentence's words) and stays. */
  function showToken(t) {
    if (t === "" || t === null || t === undefined) return "\u2205";
    return String(t).replace(/ +/g, function (run, at, all) {
      return run.length === 1 && at > 0 && at + 1 < all.length ? run : run.replace(/ /g, "\u2423");
    }).replace(/\n/g, "\u21b5").replace(/\t/g, "\u21e5");
  }

  function el(tag, cls, text) {
    var e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined && text !== null) e.textContent = text;
    return e;
  }

  /** The largest weight of some maps (0 where they are empty). */
  function maxWeight(maps) {
    var top = 0;
    maps.forEach(function (m) {
      m.weights.forEach(function (row) {
        row.forEach(function (w) { if (isFinite(w) && w > top) top = w; });
      });
    });
    return top;
  }

  /** The scale's top: opts.vmax when a number, the maps' largest weight for "auto", else
   * 1 (attention weights are probabilities) unless a weight is larger. */
  function scaleTop(maps, opts) {
    if (typeof opts.vmax === "number" && opts.vmax > 0) return opts.vmax;
    var top = maxWeight(maps);
    if (opts.vmax === "auto") return top > 0 ? top : 1;
    return Math.max(1, top);
  }

  function goldSet(map) {
    var set = {};
    (map.gold || []).forEach(function (p) { set[p[0] + "," + p[1]] = true; });
    return set;
  }

  /** Show `text` in the readout; a floating tooltip (opts.float) moves beside `cell`. */
  function point(readout, text, cell, float) {
    readout.textContent = text;
    if (!float) return;
    var r = cell.getBoundingClientRect();
    readout.style.left = (r.right + window.scrollX + 8) + "px";
    readout.style.top = (r.top + window.scrollY - 4) + "px";
    readout.hidden = false;
  }

  function headerRow(cols, size) {
    var tr = el("tr");
    tr.appendChild(el("th"));
    cols.forEach(function (s) {
      var th = el("th", null, showToken(s));
      th.style.width = size + "px";
      tr.appendChild(th);
    });
    return tr;
  }

  /** The rows of one map appended to tbody: one <tr> per output token, one cell per source. */
  function bodyRows(tbody, map, ctx) {
    var gold = goldSet(map);
    map.weights.forEach(function (row, i) {
      var tr = el("tr");
      tr.appendChild(el("th", null, showToken(map.rows[i])));
      row.forEach(function (w, j) {
        var c = colour(w, ctx.vmax), td = el("td", "hm-cell");
        var text = showToken(map.rows[i]) + " <- " + showToken(map.cols[j]) + ": " +
          Number(w).toFixed(3);
        if (ctx.numbers) td.textContent = Number(w).toFixed(2);
        td.style.background = c.css;
        td.style.color = c.dark ? "#fff" : "#000";
        td.style.width = td.style.minWidth = td.style.height = ctx.cell + "px";
        td.title = text;
        td.setAttribute("data-i", i);
        td.setAttribute("data-j", j);
        td.setAttribute("data-w", w);
        if (gold[i + "," + j]) td.classList.add("hm-gold");
        td.addEventListener("mouseenter", function () {
          point(ctx.readout, text, td, ctx.float);
        });
        if (ctx.float) td.addEventListener("mouseleave", function () { ctx.readout.hidden = true; });
        tr.appendChild(td);
      });
      tbody.appendChild(tr);
    });
  }

  function context(maps, opts) {
    var small = maps.every(function (m) { return m.weights.length <= 12 && m.cols.length <= 12; });
    return {
      vmax: scaleTop(maps, opts),
      cell: opts.cell || 22,
      numbers: opts.numbers === undefined ? small && (opts.cell || 22) >= 22 : opts.numbers,
      readout: opts.tooltip || el("div", "hm-readout", "hover a cell"),
      float: Boolean(opts.tooltip && opts.float),
      gold: maps.some(function (m) { return m.gold && m.gold.length > 0; })
    };
  }

  /** A colour bar from 0 to vmax. */
  function legend(vmax, label) {
    var box = el("div", "hm-legend"), bar = el("span", "bar");
    var stops = VIRIDIS.map(function (c) { return "rgb(" + c.join(",") + ")"; });
    bar.style.background = "linear-gradient(to right," + stops.join(",") + ")";
    box.appendChild(el("span", null, "0"));
    box.appendChild(bar);
    box.appendChild(el("span", null, Number(vmax).toPrecision(3) + (label ? " " + label : "")));
    return box;
  }

  /** What an outlined cell means, under a map that has some. */
  function goldKey(label) {
    var box = el("div", "hm-gold-key");
    box.appendChild(el("span", "swatch"));
    box.appendChild(el("span", null, label || GOLD_LABEL));
    return box;
  }

  function finishBox(container, box, ctx, opts) {
    if (!opts.tooltip) box.insertBefore(ctx.readout, box.firstChild);
    if (opts.legend) box.appendChild(legend(ctx.vmax, opts.legendLabel));
    if (ctx.gold) box.appendChild(goldKey(opts.goldLabel));
    if (container) container.appendChild(box);
    return box;
  }

  /**
   * Draw one map into `container` (may be null: the box is only returned).
   * opts: vmax (number | "auto"; default 1 unless a weight is larger), cell (px, default 22),
   * numbers (write the weights in the cells; default for small maps), tooltip (an element that
   * shows the hovered cell's "output <- source: weight"; default a line above the map), float
   * (move the tooltip beside the cell), legend (draw a colour bar), title, goldLabel (the key
   * under a map with gold cells: what the outline means).
   */
  function draw(container, map, opts) {
    injectStyle();
    opts = opts || {};
    var ctx = context([map], opts), box = el("div", "hm-box");
    if (opts.title || map.title) box.appendChild(el("div", "hm-title", opts.title || map.title));
    var table = el("table", "hm"), head = el("thead"), body = el("tbody");
    head.appendChild(headerRow(map.cols, ctx.cell));
    bodyRows(body, map, ctx);
    table.appendChild(head);
    table.appendChild(body);
    box.appendChild(table);
    return finishBox(container, box, ctx, opts);
  }

  function sameTokens(a, b) {
    return a.length === b.length && a.every(function (t, k) { return t === b[k]; });
  }

  /**
   * Several maps on shared axes: one table, one colour scale (the largest vmax of them), the
   * same cell size, and the source tokens as one column axis (repeated above a map only where
   * its source tokens differ). Each map's rows follow a group heading with its title.
   */
  function drawShared(container, maps, opts) {
    injectStyle();
    opts = opts || {};
    var ctx = context(maps, opts), box = el("div", "hm-box hm-shared");
    var widest = maps.reduce(function (n, m) { return Math.max(n, m.cols.length); }, 0);
    var table = el("table", "hm"), head = el("thead"), body = el("tbody");
    head.appendChild(headerRow(maps[0].cols, ctx.cell));
    maps.forEach(function (map, k) {
      if (k > 0 && !sameTokens(map.cols, maps[0].cols)) body.appendChild(headerRow(map.cols, ctx.cell));
      var tr = el("tr"), th = el("th", "hm-group", map.title || "map " + (k + 1));
      th.colSpan = widest + 1;
      tr.appendChild(th);
      body.appendChild(tr);
      bodyRows(body, map, ctx);
    });
    table.appendChild(head);
    table.appendChild(body);
    box.appendChild(table);
    return finishBox(container, box, ctx, opts);
  }

  /** Paint a grey image (rows x cols, 0..1) on a canvas, `scale` px per pixel. */
  function imageCanvas(image, scale) {
    var h = image.length, w = h ? image[0].length : 0, canvas = el("canvas");
    canvas.width = w * scale;
    canvas.height = h * scale;
    var g = canvas.getContext("2d");
    image.forEach(function (row, r) {
      row.forEach(function (v, c) {
        var grey = Math.round(Math.min(Math.max(v, 0), 1) * 255);
        g.fillStyle = "rgb(" + grey + "," + grey + "," + grey + ")";
        g.fillRect(c * scale, r * scale, scale, scale);
      });
    });
    return canvas;
  }

  /** The attention map's regions as translucent cells over the image, hover to read them. */
  function overlayCells(box, attention, size, ctx) {
    var rows = attention.length, cols = rows ? attention[0].length : 0;
    var top = maxWeight([{weights: attention}]) || 1;
    attention.forEach(function (row, r) {
      row.forEach(function (w, c) {
        var cell = el("div", "ov-cell"), col = colour(w, top).rgb;
        var text = ctx.cellName + " (" + r + ", " + c + "): " + Number(w).toFixed(3);
        cell.style.left = (c * size.width / cols) + "px";
        cell.style.top = (r * size.height / rows) + "px";
        cell.style.width = (size.width / cols) + "px";
        cell.style.height = (size.height / rows) + "px";
        cell.style.background = "rgba(" + col.join(",") + "," + (0.15 + 0.55 * w / top) + ")";
        cell.title = text;
        cell.setAttribute("data-w", w);
        cell.setAttribute("data-r", r);
        cell.setAttribute("data-c", c);
        cell.addEventListener("mouseenter", function () { point(ctx.readout, text, cell, ctx.float); });
        box.appendChild(cell);
      });
    });
  }

  /** The glimpses so far: a path through their centres, the current one as a square. */
  function glimpseCanvas(glimpses, image, scale) {
    var h = image.length, w = h ? image[0].length : 0, canvas = el("canvas", "ov-glimpses");
    canvas.width = w * scale;
    canvas.height = h * scale;
    var g = canvas.getContext("2d");
    var pts = glimpses.map(function (q) {
      return [(q.x + 1) / 2 * w * scale, (q.y + 1) / 2 * h * scale, q.size * scale];
    });
    g.lineWidth = 2;
    g.strokeStyle = "#fbbf24";
    g.beginPath();
    pts.forEach(function (p, k) { if (k) g.lineTo(p[0], p[1]); else g.moveTo(p[0], p[1]); });
    g.stroke();
    pts.forEach(function (p, k) {
      g.fillStyle = k === pts.length - 1 ? "#ef4444" : "#fbbf24";
      g.beginPath();
      g.arc(p[0], p[1], 3, 0, 2 * Math.PI);
      g.fill();
    });
    var last = pts[pts.length - 1];
    if (last) {
      g.strokeStyle = "#ef4444";
      g.strokeRect(last[0] - last[2] / 2, last[1] - last[2] / 2, last[2], last[2]);
    }
    return canvas;
  }

  /**
   * Visual attention at one step: the grey `image` (rows x cols, 0..1) with `step.attention`
   * (a map over the image's regions, coloured on its own 0..max scale) or the glimpses
   * `path` (the steps' glimpses up to this one: {x, y} centres in -1..1, size in pixels) on it.
   * opts: scale (px per image pixel, default 8), tooltip, float, title.
   */
  /** A picture (its URL) shown `side` x `side` pixels, as a model that resizes it sees it. */
  function pictureElement(url, side) {
    var img = el("img");
    img.src = url;
    img.width = img.height = side;
    img.alt = "the image the model read";
    return img;
  }

  /**
   * An image with a step's attention over its regions (`step.attention`, rows x cols) and a
   * glimpse path (`opts.path`). `image`: grey pixels (rows of 0..1, drawn `opts.scale` to a
   * pixel), or a picture's URL (drawn `opts.side` pixels a side, regions named `opts.cellName`).
   */
  function overlay(container, image, step, opts) {
    injectStyle();
    opts = opts || {};
    var scale = opts.scale || 8, box = el("div", "hm-box"), ctx = context([], opts);
    ctx.cellName = opts.cellName || "region";
    if (opts.title) box.appendChild(el("div", "hm-title", opts.title));
    var frame = el("div", "ov");
    var canvas = typeof image === "string" ? pictureElement(image, opts.side || 256) :
      imageCanvas(image, scale);
    frame.appendChild(canvas);
    if (step && step.attention) {
      overlayCells(frame, step.attention, {width: canvas.width, height: canvas.height}, ctx);
    }
    if (opts.path && opts.path.length) frame.appendChild(glimpseCanvas(opts.path, image, scale));
    box.appendChild(frame);
    return finishBox(container, box, ctx, opts);
  }

  root.AttnkitHeatmap = {
    colour: colour,
    showToken: showToken,
    draw: draw,
    drawShared: drawShared,
    overlay: overlay,
    legend: legend,
    maxWeight: maxWeight
  };
})(typeof window !== "undefined" ? window : this);
