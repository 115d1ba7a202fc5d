/*
 * The pointer view of the explorer (pointer networks): enter points ("x,y x,y ...") or, for a
 * sorting model, numbers ("0.3 0.9 0.1"), or click in the square to add one; see the order the
 * model chose drawn over the points (a closed path for hull and TSP) and, beside it, the
 * pointer heatmap that is the answer: one row per step, one column per slot, "end" first
 * (POST v1/solve).
 */
(function (root) {
  "use strict";
  var $ = function (id) { return document.getElementById(id); };
  var NS = "http://www.w3.org/2000/svg";
  var SIZE = 360, PAD = 24, LANE = 14;  // LANE: a label's line height
  var state = {info: null, seq: 0, last: null};

  function showError(err) {
    var box = $("error");
    if (!err) { box.hidden = true; box.textContent = ""; return; }
    box.textContent = (err.field ? err.field + ": " : "") + err.message;
    box.hidden = false;
  }

  function el(name, attrs) {
    var node = document.createElementNS(NS, name);
    Object.keys(attrs).forEach(function (k) { node.setAttribute(k, attrs[k]); });
    return node;
  }

  function dims() { return state.info && state.info.dims === 1 ? 1 : 2; }

  /** The points of the text box: [[x, y], ...] (or [[v], ...] for a sorting model). */
  function parse() {
    return $("pointer-points").value.trim().split(/\s+/).filter(Boolean).map(function (p) {
      return p.split(",").map(Number);
    });
  }

  function write(points) {
    $("pointer-points").value = points.map(function (p) { return p.join(","); }).join(" ");
  }

  /** Page position of a point: the square shows 0..1 (wider where the points are). */
  function scale(points) {
    var lo = 0, hi = 1;
    points.forEach(function (p) {
      p.forEach(function (v) { if (isFinite(v)) { lo = Math.min(lo, v); hi = Math.max(hi, v); } });
    });
    var span = hi - lo || 1;
    return {
      at: function (p) {
        var x = PAD + (p[0] - lo) / span * (SIZE - 2 * PAD);
        var y = p.length > 1 ? SIZE - PAD - (p[1] - lo) / span * (SIZE - 2 * PAD) : SIZE / 2;
        return [x, y];
      },
      back: function (x, y) {
        var v = function (px) { return Math.round((lo + px * span) * 100) / 100; };
        var fx = (x - PAD) / (SIZE - 2 * PAD), fy = (SIZE - PAD - y) / (SIZE - 2 * PAD);
        return dims() === 1 ? [v(fx)] : [v(fx), v(fy)];
      }
    };
  }

  /** Where a label may go, nearest its point first: [dx, baseline dy, text-anchor]. On a line
   * (sorting) lanes above and below the line, alternately; on a plane the four corners, then
   * farther out. */
  function offsets() {
    var out = [];
    if (dims() === 1) {
      for (var lane = 0; lane < 22; lane++) {
        var far = Math.floor(lane / 2) * LANE;
        out.push(lane % 2 ? [0, 19 + far, "middle"] : [0, -9 - far, "middle"]);
      }
      return out;
    }
    for (var ring = 0; ring < 4; ring++) {
      var up = -7 - ring * LANE, down = 15 + ring * LANE;
      out.push([7, up, "start"], [7, down, "start"], [-7, up, "end"], [-7, down, "end"]);
    }
    return out;
  }

  function overlaps(a, b) {
    return a.x0 < b.x1 && b.x0 < a.x1 && a.y0 < b.y1 && b.y0 < a.y1;
  }

  /** Each label at the first place of offsets() that lies inside the square and overlaps no dot
   * and no label placed before it (a thin line joins a label set away from its point); a label
   * with no such place is left out: its point's tooltip still names its step. */
  function placeLabels(svg, labels) {
    var taken = labels.map(function (l) {  // the dots
      return {x0: l.at[0] - 5, x1: l.at[0] + 5, y0: l.at[1] - 5, y1: l.at[1] + 5};
    });
    var spots = offsets();
    labels.forEach(function (l) {
      var text = el("text", {"class": "pointer-label"});
      text.textContent = l.text;
      svg.appendChild(text);
      var width = text.getComputedTextLength() || l.text.length * 6.7;  // 11px monospace
      for (var k = 0; k < spots.length; k++) {
        var dx = spots[k][0], dy = spots[k][1], anchor = spots[k][2];
        var x = l.at[0] + dx, y = l.at[1] + dy;
        var x0 = anchor === "start" ? x : (anchor === "end" ? x - width : x - width / 2);
        var box = {x0: x0 - 1, x1: x0 + width + 1, y0: y - 10, y1: y + 3};
        if (box.x0 < 0 || box.x1 > SIZE || box.y0 < 0 || box.y1 > SIZE) continue;
        if (taken.some(function (t) { return overlaps(t, box); })) continue;
        taken.push(box);
        text.setAttribute("x", x);
        text.setAttribute("y", y);
        text.setAttribute("text-anchor", anchor);
        if (Math.abs(dy) > LANE + 8) {
          svg.insertBefore(el("line", {x1: l.at[0], y1: l.at[1], x2: x, y2: dy < 0 ? y + 3 : y - 10,
            stroke: "#d1d5db", "class": "pointer-leader"}), svg.firstChild);
        }
        return;
      }
      svg.removeChild(text);
    });
  }

  function drawPlane(points, order) {
    var box = $("pointer-plane"), s = scale(points), labels = [];
    box.textContent = "";
    var svg = el("svg", {width: SIZE, height: SIZE, viewBox: "0 0 " + SIZE + " " + SIZE});
    if (dims() === 1) {
      svg.appendChild(el("line", {x1: PAD, y1: SIZE / 2, x2: SIZE - PAD, y2: SIZE / 2,
        stroke: "#d1d5db"}));
    }
    if (order && order.length) {
      var closed = state.info.task === "hull" || state.info.task === "tsp";
      var path = order.concat(closed && order.length > 2 ? [order[0]] : []).map(function (i) {
        return s.at(points[i]).join(",");
      });
      svg.appendChild(el("polyline", {points: path.join(" "), fill: "none", stroke: "#4f46e5",
        "stroke-width": 2, "class": "pointer-path"}));
    }
    points.forEach(function (p, i) {
      var xy = s.at(p), step = order ? order.indexOf(i) : -1;
      var dot = el("circle", {cx: xy[0], cy: xy[1], r: 5, fill: step >= 0 ? "#f97316" : "#9ca3af",
        stroke: "#111827", "stroke-width": 0.5, "class": "pointer-point"});
      var title = el("title", {});
      title.textContent = "point " + i + ": " + p.join(", ") +
        (step >= 0 ? " (step " + (step + 1) + ")" : "");
      dot.appendChild(title);
      svg.appendChild(dot);
      labels.push({at: xy, step: step, text: step >= 0 ? i + " (step " + (step + 1) + ")" :
        String(i)});
    });
    box.appendChild(svg);  // in the page first: the labels' widths are measured there
    labels.sort(function (a, b) {  // the model's order first: a crowded line drops the last steps
      return (a.step < 0 ? 1e9 : a.step) - (b.step < 0 ? 1e9 : b.step);
    });
    placeLabels(svg, labels);
    svg.addEventListener("click", function (e) {
      var r = svg.getBoundingClientRect();
      var points = parse().filter(function (p) { return p.length === dims(); });
      points.push(s.back(e.clientX - r.left, e.clientY - r.top));
      write(points);
      solve();
    });
  }

  function show(result) {
    state.last = result;
    var figures = result.tour_length !== undefined && result.tour_length !== null ?
      " \u00b7 tour length " + result.tour_length.toFixed(4) :
      (result.area !== undefined && result.area !== null ? " \u00b7 area " +
        result.area.toFixed(4) : "");
    $("pointer-summary").textContent = "order " + result.order.join(" ") + figures +
      " \u00b7 log-probability " + result.log_prob.toFixed(3);
    drawPlane(result.points, result.order);
    var record = result.record, box = $("pointer-map");
    box.textContent = "";
    root.AttnkitHeatmap.draw(box, {rows: record.output_tokens, cols: record.source_tokens,
      weights: record.weights, gold: null, title: "pointer attention (the answer)"},
      {legend: true, tooltip: $("tooltip"), float: true});
  }

  /** The beam box within 1..its max (the server's limit), shown as sent. */
  function beam() {
    var box = $("pointer-beam"), most = parseInt(box.max, 10) || Infinity;
    var value = Math.min(Math.max(1, parseInt(box.value, 10) || 1), most);
    box.value = value;
    return value;
  }

  function solve() {
    var points = parse();
    if (!state.info || !points.length) return;
    var seq = ++state.seq;
    $("busy").hidden = false;
    root.AttnkitApi.solve({model: state.info.name, points: points,
      beam: beam()}).then(function (body) {
      if (seq !== state.seq) return;
      showError(null);
      show(body);
    }, function (err) {
      if (seq === state.seq) showError(err);
    }).then(function () { if (seq === state.seq) $("busy").hidden = true; });
  }

  function randomPoints() {
    var n = (state.info && state.info.points) || 10, seen = {}, points = [];
    while (points.length < n) {
      var p = [];
      for (var d = 0; d < dims(); d++) p.push(Math.round(Math.random() * 100) / 100);
      if (!seen[p.join(",")]) { seen[p.join(",")] = true; points.push(p); }
    }
    write(points);
    solve();
  }

  function wire() {
    $("pointer-solve").addEventListener("click", solve);
    $("pointer-random").addEventListener("click", randomPoints);
    $("pointer-clear").addEventListener("click", function () {
      write([]);
      state.last = null;
      $("pointer-map").textContent = "";
      $("pointer-summary").textContent = "";
      drawPlane([], null);
    });
    $("pointer-beam").addEventListener("change", beam);
    $("pointer-points").addEventListener("keydown", function (e) {
      if (e.key === "Enter") solve();
    });
  }

  function start(info) {
    state.info = info;
    state.last = null;
    $("pointer-what").textContent = info.dims === 1 ? "numbers" : "points";
    $("pointer-points").placeholder = info.dims === 1 ? "e.g. 0.3 0.9 0.1 0.5" :
      "e.g. 0.1,0.1 0.9,0.2 0.5,0.9 0.5,0.5";
    $("pointer-map").textContent = "";
    $("pointer-summary").textContent = "";
    // the model's example points (unless the user typed some), solved at once
    root.AttnkitApi.prefill($("pointer-points"), (info.example || []).map(function (p) {
      return p.join(",");
    }).join(" "));
    drawPlane(parse().filter(function (p) { return p.length === dims(); }), null);
    solve();
  }

  root.AttnkitPointer = {start: start, wire: wire, state: state};
})(window);
