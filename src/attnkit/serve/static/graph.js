/*
 * The graph view of the explorer: pick a node (its index or its id), see its two-hop
 * neighbourhood with every edge shaded and widened by the attention it carries into its
 * target, choose the layer and the head (or their mean), and read each neighbour's weight and
 * saliency in the table (POST v1/graph/node).
 */
(function (root) {
  "use strict";
  var $ = function (id) { return document.getElementById(id); };
  var NS = "http://www.w3.org/2000/svg";
  var PALETTE = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2",
    "#7f7f7f", "#bcbd22", "#17becf"];
  var model = null, shown = null;

  function el(name, attrs) {
    var node = document.createElementNS(NS, name);
    Object.keys(attrs).forEach(function (k) { node.setAttribute(k, attrs[k]); });
    return node;
  }

  function positions(hops) {  // rings: the node in the middle, each hop on a circle
    var pos = hops.map(function () { return [0, 0]; });
    var top = Math.max.apply(null, hops);
    for (var hop = 1; hop <= top; hop++) {
      var ring = [];
      hops.forEach(function (h, i) { if (h === hop) ring.push(i); });
      ring.forEach(function (i, k) {
        var angle = 2 * Math.PI * (k + 0.5 * (hop - 1)) / ring.length;
        pos[i] = [hop * Math.cos(angle), hop * Math.sin(angle)];
      });
    }
    return pos;
  }

  function edgeWeights(data, layer, head) {
    if (!data.weights.length) return null;
    var w = data.weights[layer];
    return w.map(function (row) {
      if (head >= 0 && head < row.length) return row[head];
      return row.reduce(function (a, b) { return a + b; }, 0) / row.length;
    });
  }

  function draw() {
    var data = shown, box = $("graph-svg");
    box.textContent = "";
    var layer = +$("graph-layer").value, head = +$("graph-head").value;
    var weights = edgeWeights(data, layer, head), pos = positions(data.hops);
    var size = 520, scale = size / (2 * Math.max(1, Math.max.apply(null, data.hops)) + 1);
    var svg = el("svg", {width: size, height: size, viewBox: "0 0 " + size + " " + size});
    var xy = function (p) { return [size / 2 + p[0] * scale, size / 2 + p[1] * scale]; };
    data.edges.forEach(function (pair, k) {
      if (pair[0] === pair[1]) return;
      var a = xy(pos[pair[0]]), b = xy(pos[pair[1]]), w = weights ? weights[k] : 0.5;
      var line = el("line", {x1: a[0], y1: a[1], x2: b[0], y2: b[1], stroke: "#08519c",
        "stroke-width": 0.4 + 5 * w, "stroke-opacity": 0.15 + 0.85 * w});
      var title = el("title", {});
      title.textContent = data.neighbours[pair[0]] + " \u2192 " + data.neighbours[pair[1]] +
        (weights ? ": " + w.toFixed(3) : "");
      line.appendChild(title);
      svg.appendChild(line);
    });
    data.neighbours.forEach(function (name, i) {
      var p = xy(pos[i]), c = data.class_names.indexOf(data.classes[i]);
      var dot = el("circle", {cx: p[0], cy: p[1], r: i === 0 ? 10 : (data.hops[i] === 1 ? 6 : 4),
        fill: c >= 0 ? PALETTE[c % 10] : "#ccc", stroke: i === 0 ? "red" : "#333",
        "stroke-width": i === 0 ? 2.5 : 0.5, "data-node": name});
      var title = el("title", {});
      title.textContent = name + " (" + (data.classes[i] || "-") + ")";
      dot.appendChild(title);
      dot.addEventListener("click", function () { $("graph-node").value = name; show(); });
      svg.appendChild(dot);
    });
    box.appendChild(svg);
    table(data, weights);
  }

  function table(data, weights) {
    var rows = ["<tr><th>neighbour</th><th>class</th><th>attention</th><th>saliency</th></tr>"];
    data.edges.forEach(function (pair, k) {
      if (pair[1] !== 0) return;
      var j = pair[0];
      rows.push("<tr><td>" + data.neighbours[j] + "</td><td>" + (data.classes[j] || "-") +
        "</td><td>" + (weights ? weights[k].toFixed(3) : "-") + "</td><td>" +
        data.saliency[j].toFixed(3) + "</td></tr>");
    });
    $("graph-table").innerHTML = rows.join("");
  }

  function fillChoices(data) {
    var layers = $("graph-layer"), heads = $("graph-head");
    var keepLayer = layers.value, keepHead = heads.value;
    layers.textContent = ""; heads.textContent = "";
    data.weights.forEach(function (w, i) {
      layers.appendChild(new Option("layer " + (i + 1), i));
    });
    var count = data.weights.length ? data.weights[data.weights.length - 1][0].length : 0;
    var widest = Math.max.apply(null, data.weights.map(function (w) { return w[0].length; }));
    heads.appendChild(new Option("mean of heads", -1));
    for (var h = 0; h < (widest || count); h++) heads.appendChild(new Option("head " + (h + 1), h));
    layers.value = keepLayer !== "" && keepLayer < data.weights.length ? keepLayer :
      Math.max(0, data.weights.length - 1);
    heads.value = keepHead !== "" ? keepHead : -1;
  }

  function show() {
    $("error").hidden = true;
    root.AttnkitApi.graphNode(model, $("graph-node").value.trim()).then(function (data) {
      shown = data;
      fillChoices(data);
      $("graph-results").hidden = false;
      $("graph-summary").textContent = "node " + data.node + ": label " + data.label +
        ", predicted " + data.prediction + (data.agreement && data.agreement.rank_correlation !==
        null ? " \u00b7 attention vs saliency: Spearman " +
        data.agreement.rank_correlation.toFixed(2) : "");
      draw();
    }, function (err) {
      $("error").textContent = (err.field ? err.field + ": " : "") + err.message;
      $("error").hidden = false;
    });
  }

  root.AttnkitGraph = {
    wire: function () {
      $("graph-show").addEventListener("click", show);
      $("graph-node").addEventListener("keydown", function (e) { if (e.key === "Enter") show(); });
      $("graph-layer").addEventListener("change", function () { if (shown) draw(); });
      $("graph-head").addEventListener("change", function () { if (shown) draw(); });
    },
    /** The model chosen: its example node (unless the user typed one), explained at once. */
    start: function (m) {
      model = m.name;
      shown = null;
      $("graph-results").hidden = true;
      root.AttnkitApi.prefill($("graph-node"), m.example);
      if ($("graph-node").value.trim()) show();
    }
  };
})(window);
