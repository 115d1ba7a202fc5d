/*
 * The text view: type a source, see the translation and where each output token looked
 * (debounced, ~250 ms), the n-best list and its beam tree, the top-k candidates of every step
 * (click one: decode again forced through it, the what-if), a second model side by side on
 * shared axes, saliency, gold links, and a Transformer's layers and heads, or its attention
 * rollout or flow through the encoder (the "map" selector; the server computes them, for the
 * best output, when asked: flow only up to its bound, and a line says why beyond it).
 */
(function (root) {
  "use strict";
  var H = root.AttnkitHeatmap, $ = function (id) { return document.getElementById(id); };
  var DEBOUNCE_MS = 250, TOP_K = 5;

  var state = {
    models: [], model: null, second: null, prefix: null, shown: 0, seq: 0,
    result: null, secondResult: null, timer: null, asked: false, reference: null
  };

  function el(tag, cls, text) {
    var e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined) e.textContent = text;
    return e;
  }

  function info(name) {
    return state.models.find(function (m) { return m.name === name; }) || null;
  }

  function showError(err) {
    var box = $("error");
    if (!err) { box.hidden = true; box.textContent = ""; return; }
    box.textContent = plainError(err.field, err.message);
    box.hidden = false;
  }

  /** An API error in plain words, its field named once ("beam: at most 10"). */
  function plainError(field, message) {
    var text = String(message || "");
    if (field && text.indexOf(field + ": ") === 0) text = text.slice(field.length + 2);
    text = text.replace(/^Input should be less than or equal to /, "at most ")
      .replace(/^Input should be greater than or equal to /, "at least ")
      .replace(/^Input should be a valid integer.*/, "a whole number, please")
      .replace(/^String should have at most (\d+) characters?/, "at most $1 characters");
    return (field ? field + ": " : "") + text;
  }

  /** The beam and n-best of the boxes within 1..the model's limit (n-best within the beam); the
   * boxes show what the model shown is asked (a beam of 12 past a limit of 10 reads 10). */
  function beamChoice(model) {
    var m = info(model);
    var most = m && m.limits ? m.limits.max_beam : Infinity;  // the server's limit
    var beam = Math.min(Math.max(1, parseInt($("beam").value, 10) || 1), most);
    var nbest = Math.min(Math.max(1, parseInt($("nbest").value, 10) || 1), beam);
    if (model === state.model) {
      $("beam").value = beam;
      $("nbest").value = nbest;
    }
    return {beam: beam, nbest: nbest};
  }

  function requestBody(model, withPrefix) {
    var m = info(model), asked = beamChoice(model);
    return {
      model: model, inputs: [$("source").value], beam: asked.beam, n_best: asked.nbest,
      top_k: TOP_K,
      prefix: withPrefix ? state.prefix : null,
      explain: Boolean($("saliency").checked && m && m.explain),
      gold: Boolean($("gold").checked && m && m.has_gold),
      reference: withPrefix && state.reference && $("gold").checked ? state.reference : null,
      rollout: model === state.model && mapKind() !== "attention"
    };
  }

  /** Decode the current input with the model (and the second one), drop stale answers. */
  function decode() {
    clearTimeout(state.timer);
    var seq = ++state.seq, text = $("source").value;
    if (!text.trim()) { state.result = state.secondResult = null; render(); showError(null); return; }
    $("busy").hidden = false;
    var calls = [root.AttnkitApi.translate(requestBody(state.model, true))];
    if (state.second) calls.push(root.AttnkitApi.translate(requestBody(state.second, false)));
    Promise.all(calls).then(function (answers) {
      if (seq !== state.seq) return;
      state.result = answers[0].results[0];
      state.secondResult = answers[1] ? answers[1].results[0] : null;
      state.shown = Math.min(state.shown, state.result.hypotheses.length - 1);
      showError(null);
      render();
    }, function (err) {
      if (seq !== state.seq) return;
      state.result = state.secondResult = null;  // no stale n-best list or map under an error
      render();
      showError(err);
    }).then(function () { if (seq === state.seq) $("busy").hidden = true; });
  }

  function later() {
    clearTimeout(state.timer);
    state.timer = setTimeout(decode, DEBOUNCE_MS);
  }

  /** The weights the selectors ask for: attention, or a layer/head (or their mean). */
  function weightsOf(hyp) {
    var m = info(state.model);
    if (!hyp.layers || !m || !m.layers) return hyp.attention;
    var layer = $("layer").value, head = $("head").value;
    return hyp.layers.map(function (perLayer) {
      var ls = layer === "mean" ? perLayer : [perLayer[+layer]];
      var picked = [];
      ls.forEach(function (heads) {
        (head === "mean" ? heads : [heads[+head]]).forEach(function (h) { picked.push(h); });
      });
      return picked[0].map(function (_, s) {
        return picked.reduce(function (a, h) { return a + h[s]; }, 0) / picked.length;
      });
    });
  }

  /** "attention", or "rollout" / "flow" where the model is a Transformer and they are chosen. */
  function mapKind() {
    var m = info(state.model);
    return m && m.layers ? $("map").value : "attention";
  }

  /** The rollout or flow map chosen, or a line saying why there is none ({weights, note}). */
  function derived(result, kind) {
    if (state.shown !== 0) return {note: kind + " is drawn for the best output: choose it"};
    if (result[kind]) return {weights: result[kind]};
    return {note: result.flow_note || kind + ": not computed for this answer"};
  }

  function mapOf(result, hyp, weights, title) {
    return {rows: hyp.tokens, cols: result.source_tokens, weights: weights, title: title};
  }

  function renderOutput(result) {
    var hyp = result.hypotheses[state.shown];
    $("output").textContent = hyp.output;
    $("prefix-bar").hidden = !state.prefix;
    $("prefix").textContent = state.prefix ? state.prefix.map(H.showToken).join(" ") : "";
  }

  function renderNbest(result) {
    var list = $("nbest-list");
    list.textContent = "";
    result.hypotheses.forEach(function (hyp, k) {
      var li = el("li", k === state.shown ? "hyp shown" : "hyp");
      li.appendChild(el("span", "hyp-out", hyp.output));
      li.appendChild(el("span", "hyp-score", hyp.score.toFixed(3)));
      li.setAttribute("data-hyp", k);
      li.addEventListener("click", function () { pick(k); });
      list.appendChild(li);
    });
    root.AttnkitBeamTree.draw($("beamtree"), result.hypotheses, state.shown, pick);
  }

  function pick(k) {
    state.shown = k;
    render();
  }

  function renderMaps(result) {
    var box = $("heatmap"), hyp = result.hypotheses[state.shown], tip = $("tooltip");
    box.textContent = "";
    var m = info(state.model), opts = {tooltip: tip, float: true, legend: true};
    opts.legendLabel = "attention";
    // beside a second model, the attention here is on the side-by-side maps' one scale
    if (state.secondResult) opts.vmax = sharedTop(result, state.secondResult);
    var kind = mapKind(), note = $("map-note");
    note.hidden = true;
    $("layer").disabled = $("head").disabled = kind !== "attention";
    if ($("grid").checked && hyp.layers && m && m.layers) return renderGrid(box, result, hyp);
    var att = mapOf(result, hyp, weightsOf(hyp), "attention: " + state.model);
    if (kind !== "attention") {
      var got = derived(result, kind);
      note.textContent = got.note || "";
      note.hidden = !got.note;
      if (got.weights) {  // its own scale: not the side-by-side attention's
        att = mapOf(result, hyp, got.weights, "attention " + kind + ": " + state.model);
        opts.legendLabel = kind;
        delete opts.vmax;
      }
    }
    if (state.shown === 0 && result.gold) att.gold = result.gold;
    $("gold-note").hidden = !($("gold").checked && m && m.has_gold && state.shown === 0 &&
      !(result.gold && result.gold.length));
    if (m && !m.has_attention) att.title = state.model + " has no attention";
    H.draw(box, att, opts);
    if (hyp.p_gen) {  // a copying model: its switch at every output step, beside the map
      H.draw(box, {rows: hyp.tokens, cols: ["p_gen"], title: "p_gen (1 write, 0 copy)",
        weights: hyp.p_gen.map(function (p) { return [p]; })}, {tooltip: tip, float: true, vmax: 1});
    }
    if (result.saliency && state.shown === 0) renderSaliency(box, result, hyp);
    if (result.reference && !$("gold-note").hidden) renderReference(box, result);
  }

  /** Saliency is another quantity: a scale of its own, labelled; the toggle scales each row
   * (output step) to its own maximum, to compare where each step looks, not how strongly. */
  function renderSaliency(box, result, hyp) {
    var perRow = $("saliency-normalise").checked;
    var weights = perRow ? result.saliency.map(rowToMax) : result.saliency;
    var sal = mapOf(result, hyp, weights,
      perRow ? "saliency (gradient), each row / its maximum" : "saliency (gradient)");
    H.draw(box, sal, {tooltip: $("tooltip"), float: true, legend: true,
      vmax: perRow ? 1 : "auto", legendLabel: perRow ? "saliency / row max" : "saliency"});
  }

  function rowToMax(row) {
    var top = Math.max.apply(null, row.map(Math.abs));
    return row.map(function (w) { return top > 0 ? w / top : 0; });
  }

  /** The right output the user gave, written by the model forced (teacher forcing), with the
   * task's gold links outlined, or why there are none. */
  function renderReference(box, result) {
    var ref = result.reference;
    var map = {rows: ref.tokens, cols: result.source_tokens, weights: ref.attention,
      gold: ref.gold || null, title: "right output " + ref.output + ", forced: attention" +
        (ref.gold ? " and gold links" : " (no gold links: not this source's right output)")};
    var wrap = el("div", "reference-map");
    wrap.id = "reference-map";
    box.appendChild(wrap);
    H.draw(wrap, map, {tooltip: $("tooltip"), float: true, legend: true,
      legendLabel: "attention"});
  }

  /** The largest attention weight of two models' first outputs: their maps' one scale. */
  function sharedTop(a, b) {
    var top = 0;
    [a, b].forEach(function (r) {
      (r.hypotheses[0].attention || []).forEach(function (row) {
        row.forEach(function (w) { if (w > top) top = w; });
      });
    });
    return top > 0 ? top : 1;
  }

  /** Small multiples: one small map per layer and head. */
  function renderGrid(box, result, hyp) {
    var grid = el("div", "multiples"), tip = $("tooltip");
    hyp.layers[0].forEach(function (heads, l) {
      heads.forEach(function (_, h) {
        var weights = hyp.layers.map(function (step) { return step[l][h]; });
        H.draw(grid, mapOf(result, hyp, weights, "layer " + (l + 1) + " head " + (h + 1)),
          {tooltip: tip, float: true, cell: 9, numbers: false});
      });
    });
    box.appendChild(grid);
  }

  /** One column of chips per output step: the model's top-k there, the chosen one marked. */
  function renderTopk(result) {
    var box = $("topk"), hyp = result.hypotheses[state.shown];
    box.textContent = "";
    (hyp.top_k || []).forEach(function (cands, t) {
      var col = el("div", "step");
      col.appendChild(el("div", "step-head", (t + 1) + ": " + H.showToken(hyp.tokens[t])));
      cands.forEach(function (cand) {
        var chip = el("button", "chip" + (cand.token === hyp.tokens[t] ? " chosen" : ""));
        chip.type = "button";
        chip.appendChild(el("span", "chip-tok", H.showToken(cand.token)));
        chip.appendChild(el("span", "chip-p", cand.prob.toFixed(2)));
        chip.setAttribute("data-step", t);
        chip.setAttribute("data-token", cand.token);
        chip.addEventListener("click", function () { whatIf(hyp, t, cand.token); });
        col.appendChild(chip);
      });
      box.appendChild(col);
    });
  }

  /** Decode again forced through the tokens before step t and `token` at t. */
  function whatIf(hyp, t, token) {
    state.prefix = hyp.tokens.slice(0, t).concat([token]);
    state.shown = 0;
    decode();
  }

  /** A model's name with its attention type and architecture: "demo (bahdanau, RNN)". */
  function title(name) {
    var m = info(name);
    if (!m) return name;
    var arch = m.layers ? m.layers + "-layer Transformer" : "RNN";
    var att = m.attention === "transformer" ? "multi-head" : m.attention;
    return name + " (" + (m.has_attention ? att + " attention" : "no attention") + ", " + arch + ")";
  }

  function renderSecond(result, other) {
    var box = $("sbs");
    box.hidden = !other;
    if (!other) return;
    $("sbs-a").textContent = title(state.model) + ": " + result.hypotheses[0].output;
    $("sbs-b").textContent = title(state.second) + ": " + other.hypotheses[0].output;
    var maps = $("sbs-maps");
    maps.textContent = "";
    H.drawShared(maps, [
      mapOf(result, result.hypotheses[0], result.hypotheses[0].attention, title(state.model)),
      mapOf(other, other.hypotheses[0], other.hypotheses[0].attention, title(state.second))
    ], {tooltip: $("tooltip"), float: true, legend: true, vmax: "auto", legendLabel: "attention"});
  }

  function render() {
    var r = state.result;
    $("text-results").hidden = !r;
    if (!r) return;
    if (!r.hypotheses.length) return;
    renderOutput(r);
    renderNbest(r);
    renderMaps(r);
    renderTopk(r);
    renderSecond(r, state.secondResult);
  }

  function option(value, text) {
    var o = el("option", null, text);
    o.value = value;
    return o;
  }

  /** Layer/head selectors and the toggles the model supports. */
  function configure() {
    var m = info(state.model);
    $("saliency-label").hidden = !(m && m.explain);
    $("normalise-label").hidden = !(m && m.explain && $("saliency").checked);
    $("gold-label").hidden = !(m && m.has_gold);
    $("layers-box").hidden = !(m && m.layers);
    [["layer", m && m.layers], ["head", m && m.heads]].forEach(function (pair) {
      var sel = $(pair[0]);
      sel.textContent = "";
      sel.appendChild(option("mean", "mean"));
      for (var k = 0; k < (pair[1] || 0); k++) sel.appendChild(option(k, String(k + 1)));
    });
    var most = m && m.limits ? m.limits.max_beam : null;  // the server's own limit
    ["beam", "nbest"].forEach(function (id) {
      if (!most) return;
      $(id).max = most;
      if ((parseInt($(id).value, 10) || 1) > most) $(id).value = most;
    });
    var second = $("second"), keep = state.second;
    second.textContent = "";
    second.appendChild(option("", "none"));
    state.models.forEach(function (o) {
      if (o.family === "seq2seq" && o.name !== state.model) second.appendChild(option(o.name, o.name));
    });
    if (keep === null && !state.asked) {  // the page's address may ask for one: ?second=NAME
      keep = new URLSearchParams(root.location.search).get("second");
      state.asked = true;
    }
    second.value = info(keep) && keep !== state.model ? keep : "";
    state.second = second.value || null;
  }

  /**
   * The model's example (GET /v1/models: siebenundneunzig for a German number model) in the
   * source box, so that the page opens on a map; never over what the user typed.
   */
  function prefill() {
    var m = info(state.model);
    root.AttnkitApi.prefill($("source"), m && m.example);
  }

  function start(models, name) {
    state.models = models;
    state.model = name;
    state.prefix = null;
    state.shown = 0;
    configure();
    prefill();
    decode();
  }

  function wire() {
    $("source").addEventListener("input", function () {
      state.prefix = state.reference = null;  // a right output belongs to one source
      $("reference").value = "";
      later();
    });
    // Enter decodes at once; Shift+Enter puts a line break into the input
    $("source").addEventListener("keydown", function (e) {
      if (e.key !== "Enter" || e.shiftKey || e.isComposing) return;
      e.preventDefault();
      state.prefix = null;
      decode();
    });
    ["beam", "nbest"].forEach(function (id) {
      $(id).addEventListener("change", function () { state.shown = 0; decode(); });
    });
    ["saliency", "gold"].forEach(function (id) { $(id).addEventListener("change", decode); });
    $("saliency").addEventListener("change", function () {
      var m = info(state.model);
      $("normalise-label").hidden = !(m && m.explain && $("saliency").checked);
    });
    $("saliency-normalise").addEventListener("change", render);
    function askReference() {
      state.reference = $("reference").value.trim() || null;
      decode();
    }
    $("show-reference").addEventListener("click", askReference);
    $("reference").addEventListener("keydown", function (e) {
      if (e.key === "Enter") { e.preventDefault(); askReference(); }
    });
    ["layer", "head", "grid"].forEach(function (id) { $(id).addEventListener("change", render); });
    // rollout and flow come from the server: asked for once, then kept with the answer
    $("map").addEventListener("change", function () {
      if (mapKind() !== "attention" && state.result && !state.result.rollout) decode();
      else render();
    });
    $("second").addEventListener("change", function () {
      state.second = $("second").value || null;
      decode();
    });
    $("reset").addEventListener("click", function () { state.prefix = null; decode(); });
  }

  root.AttnkitText = {start: start, wire: wire, state: state, plainError: plainError};
})(window);
