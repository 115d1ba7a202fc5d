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
  var SIZE = 360, PAD = 24;
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

  function drawPlane(points, order) {
    var box = $("pointer-plane"), s = scale(points);
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
      var label = el("text", {x: xy[0] + 7, y: xy[1] - (dims() === 1 && i % 2 ? -14 : 7)});
      label.textContent = step >= 0 ? i + " (step " + (step + 1) + ")" : String(i);
      svg.appendChild(label);
    });
    svg.addEventListener("click", function (e) {
      var r = svg.getBoundingClientRect();
      var points = parse().filter(function (p) { return p.length === dims(); });
      points.push(s.back(e.clientX - r.left, e.clientY - r.top));
      write(points);
      solve();
    });
    box.appendChild(svg);
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

  function solve() {
    var points = parse();
    if (!state.info || !points.length) return;
    var seq = ++state.seq;
    $("busy").hidden = false;
    root.AttnkitApi.solve({model: state.info.name, points: points,
      beam: Math.max(1, +$("pointer-beam").value || 1)}).then(function (body) {
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
    drawPlane(parse().filter(function (p) { return p.length === dims(); }), null);
  }

  root.AttnkitPointer = {start: start, wire: wire, state: state};
})(window);
