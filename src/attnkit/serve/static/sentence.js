/*
 * The sentence view (text classifiers): type a sentence, see the predicted label, the
 * probability of each class and the weight of every word -- the words shaded by their
 * attention (or, with "saliency", by their gradient saliency), and the map drawn by the shared
 * heatmap renderer (a structured self-attention: one row per head).
 */
(function (root) {
  "use strict";
  var $ = function (id) { return document.getElementById(id); };
  var state = {model: null, seq: 0, timer: null, last: null};

  function showError(err) {
    var box = $("error");
    if (!err) { box.hidden = true; box.textContent = ""; return; }
    box.textContent = (err.field ? err.field + ": " : "") + err.message;
    box.hidden = false;
  }

  /** The words as spans, each shaded by its weight (its own colour scale: the largest). */
  function shadeWords(box, tokens, weights) {
    box.textContent = "";
    var vmax = Math.max.apply(null, weights.concat([1e-9]));
    tokens.forEach(function (token, i) {
      var span = document.createElement("span"), c = root.AttnkitHeatmap.colour(weights[i], vmax);
      span.className = "word";
      span.textContent = root.AttnkitHeatmap.showToken(token);
      span.style.background = c.css;
      span.style.color = c.dark ? "#fff" : "#111";
      span.title = token + ": " + weights[i].toFixed(4);
      box.appendChild(span);
      box.appendChild(document.createTextNode(" "));
    });
  }

  function meanRow(weights) {
    if (!Array.isArray(weights[0])) return weights;
    return weights[0].map(function (_, j) {
      return weights.reduce(function (s, row) { return s + row[j]; }, 0) / weights.length;
    });
  }

  function show(result) {
    state.last = result;
    $("sentence-results").hidden = false;
    $("sentence-label").textContent = result.label;
    var probs = $("sentence-probs");
    probs.textContent = "";
    Object.keys(result.probs).forEach(function (name) {
      var li = document.createElement("li");
      li.textContent = name + ": " + (100 * result.probs[name]).toFixed(1) + "%";
      probs.appendChild(li);
    });
    var bySaliency = $("sentence-saliency").checked && result.saliency;
    var shown = bySaliency ? result.saliency : (result.weights ? meanRow(result.weights) : null);
    $("sentence-shading").textContent = result.weights || bySaliency ? "" :
      "this model has no attention: tick saliency to shade the words";
    if (shown) shadeWords($("sentence-words"), result.tokens, shown);
    else $("sentence-words").textContent = result.tokens.join(" ");
    drawMaps(result);
  }

  /** The attention (each head a row), and the saliency below it when asked for. */
  function drawMaps(result) {
    var box = $("sentence-map"), maps = [];
    box.textContent = "";
    if (result.weights) {
      var rows = Array.isArray(result.weights[0]) ? result.weights : [result.weights];
      maps.push({rows: rows.map(function (_, k) { return rows.length > 1 ? "head " + (k + 1) :
        result.label; }), cols: result.tokens, weights: rows, gold: null, title: "attention"});
    }
    if (result.saliency) {
      maps.push({rows: [result.label], cols: result.tokens, weights: [result.saliency],
        gold: null, title: "saliency (" + result.method + ")"});
    }
    if (maps.length) root.AttnkitHeatmap.drawShared(box, maps, {legend: true, tooltip: $("tooltip"), float: true});
  }

  function classify() {
    var text = $("sentence").value.trim();
    if (!text || !state.model) return;
    var seq = ++state.seq;
    $("busy").hidden = false;
    root.AttnkitApi.classifyText({model: state.model, inputs: [text],
      explain: $("sentence-saliency").checked}).then(function (body) {
      if (seq !== state.seq) return;
      showError(null);
      show(body.results[0]);
    }, function (err) {
      if (seq === state.seq) showError(err);
    }).then(function () { if (seq === state.seq) $("busy").hidden = true; });
  }

  function wire() {
    $("sentence").addEventListener("input", function () {
      clearTimeout(state.timer);
      state.timer = setTimeout(classify, 250);
    });
    $("sentence-saliency").addEventListener("change", classify);
  }

  /** The model chosen: its example sentence in the box (unless the user typed), classified. */
  function start(m) {
    state.model = m.name;
    $("sentence-results").hidden = true;
    root.AttnkitApi.prefill($("sentence"), m.example);
    classify();
  }

  root.AttnkitSentence = {start: start, wire: wire, state: state};
})(window);
