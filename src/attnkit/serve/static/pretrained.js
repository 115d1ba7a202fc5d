/*
 * The pretrained view (Hugging Face models, POST /v1/pretrained): type a text, see the model's
 * answer (a label and its probabilities, a continuation, a translation) and one map of its
 * attention: a part (self; or encoder, decoder, cross), a layer and a head (or the mean of
 * them), or the part's rollout. The server reduces the map to the one chosen, so a long input
 * never sends L x H maps; a map beyond LONG tokens a side (or MAX_TABLE_CELLS cells) is painted
 * on a canvas, one pixel per weight scaled up, its labels drawn only where they fit and every
 * cell read on hover, instead of thousands of table cells that would freeze the page. With
 * "heads", the answer carries the part's head summary, drawn as a sortable table
 * (headstable.js) whose row click chooses that layer and head's map. A model that reads images
 * (ViT) takes a picture instead of a text: the same map choices, the map over its patches drawn
 * on the picture (patches.js) above the patch-by-patch map.
 */
(function (root) {
  "use strict";
  var H = root.AttnkitHeatmap, $ = function (id) { return document.getElementById(id); };
  var DEBOUNCE_MS = 300, LONG = 200, MAX_TABLE_CELLS = 10000, WIDTH = 900, LABEL_PX = 110;
  var state = {model: null, info: null, seq: 0, timer: null, result: null, picture: null,
    heads: {sort: null, layer: null, head: null}};

  function showError(err) {
    var box = $("error");
    if (!err) { box.hidden = true; box.textContent = ""; return; }
    var text = String(err.message || "");
    if (err.field && text.indexOf(err.field + ": ") === 0) text = text.slice(err.field.length + 2);
    box.textContent = (err.field ? err.field + ": " : "") + text;
    box.hidden = false;
  }

  function option(value, text) {
    var o = document.createElement("option");
    o.value = value;
    o.textContent = text;
    return o;
  }

  /** A selector of "mean" and 1..count, keeping its choice where it still exists. */
  function fillCount(sel, count) {
    var kept = sel.value;
    sel.textContent = "";
    sel.appendChild(option("mean", "mean"));
    for (var k = 1; k <= (count || 0); k++) sel.appendChild(option(String(k), String(k)));
    sel.value = kept && (kept === "mean" || +kept <= count) ? kept : "mean";
  }

  function writes(m) { return m && (m.task === "generate" || m.task === "translate"); }

  function readsImages() { return Boolean(state.info && state.info.reads === "images"); }

  function mapKind() { return $("pt-map").value; }

  /** The request: the text and exactly the one map to draw (the server averages the rest). */
  function requestBody() {
    var body = {model: state.model, words: $("pt-words").checked, mean: true,
      rollout: mapKind() === "rollout"};
    if (!readsImages()) body.text = $("pt-text").value;
    if ($("pt-part").value) body.part = $("pt-part").value;
    if ($("pt-layer").value !== "mean") body.layer = +$("pt-layer").value;
    if ($("pt-head").value !== "mean") body.head = +$("pt-head").value;
    if ($("pt-heads").checked) body.heads = true;
    if ($("pt-heads").checked && canInduce()) body.induction = $("pt-induction").checked;
    var n = parseInt($("pt-new").value, 10);
    if (writes(state.info) && n > 0) body.max_new_tokens = n;
    return body;
  }

  /** Induction scores: of a self-attention part's heads only, with the heads table. */
  function canInduce() {
    var ok = $("pt-heads").checked && $("pt-part").value !== "cross";
    $("pt-induction").disabled = !ok;
    return ok;
  }

  function run() {
    clearTimeout(state.timer);
    if (!state.model) return;
    var seq = ++state.seq, image = readsImages();
    if (image ? !state.picture : !$("pt-text").value.trim()) {
      state.result = null;
      $("pt-results").hidden = true;
      showError(null);
      return;
    }
    $("busy").hidden = false;
    var api = root.AttnkitApi, body = requestBody();
    var asked = image ? api.pretrainedImage(body, state.picture.blob) : api.pretrained(body);
    asked.then(function (body) {
      if (seq !== state.seq) return;
      state.result = body;
      showError(null);
      render(body);
    }, function (err) {
      if (seq !== state.seq) return;
      state.result = null;
      $("pt-results").hidden = true;  // no stale map under an error
      showError(err);
    }).then(function () { if (seq === state.seq) $("busy").hidden = true; });
  }

  function later() {
    clearTimeout(state.timer);
    state.timer = setTimeout(run, DEBOUNCE_MS);
  }

  function renderAnswer(body) {
    var labels = {classify: "label", encode: "encoded", generate: "continuation",
      translate: "translation"};
    $("pt-task").textContent = labels[body.task] || body.task;
    $("pt-output").textContent = body.task === "encode" ? "(the encoder's attention below)" :
      body.output;
    var probs = $("pt-probs");
    probs.textContent = "";
    Object.keys(body.probs || {}).forEach(function (name) {
      var li = document.createElement("li");
      li.textContent = name + ": " + (100 * body.probs[name]).toFixed(1) + "%";
      probs.appendChild(li);
    });
  }

  /** The one map of the answer the selectors ask for, or a line saying why there is none. */
  function chosenMap(body) {
    var name = $("pt-part").value || Object.keys(body.parts)[0], part = body.parts[name];
    if (!part) return {note: "part " + name + ": not in this answer"};
    fillCount($("pt-layer"), part.layers);
    fillCount($("pt-head"), part.heads);
    var rows = part.query_tokens, cols = part.key_tokens;
    if (mapKind() === "rollout") {
      if (!part.rollout) return {note: "rollout: not defined for the " + name + " part"};
      return {map: {rows: rows, cols: cols, weights: part.rollout, title: name + ": rollout"}};
    }
    var layer = part.layer_numbers.length === 1 ? "layer " + part.layer_numbers[0] : "all layers";
    var head = part.head_numbers.length === 1 ? "head " + part.head_numbers[0] : "all heads";
    var title = name + " attention: " + layer + ", " + head +
      (part.mean && part.layer_numbers.length * part.head_numbers.length > 1 ? " (mean)" : "");
    return {map: {rows: rows, cols: cols, weights: part.maps[0][0], title: title}};
  }

  function render(body) {
    $("pt-results").hidden = false;
    renderAnswer(body);
    var got = chosenMap(body), box = $("pt-map-box"), note = $("pt-note");
    box.textContent = "";
    note.textContent = got.note || "";
    note.hidden = !got.note;
    $("pt-layer").disabled = $("pt-head").disabled = mapKind() === "rollout";
    if (got.map) drawMap(box, got.map, {tooltip: $("tooltip"), float: true, legend: true,
      vmax: "auto", legendLabel: mapKind()});
    var over = $("pt-overlay-box"), picture = got.map && body.patches && state.picture;
    over.textContent = "";
    over.hidden = !picture;
    if (picture) {
      root.AttnkitPatches.draw(over, got.map, body.patches, state.picture.url,
        {tooltip: $("tooltip")});
    }
    renderHeads(body.head_summary);
  }

  /** The heads table, its sort kept across answers, the chosen layer and head marked. */
  function renderHeads(summary) {
    $("pt-heads-box").hidden = !summary;
    if (!summary) return;
    var layer = $("pt-layer").value, head = $("pt-head").value, scroll = $("pt-heads-scroll");
    state.heads.layer = layer === "mean" ? null : +layer;
    state.heads.head = head === "mean" ? null : +head;
    $("pt-heads-title").textContent = summary.part + " heads on this text, " + summary.tokens +
      " tokens (uniform entropy " + summary.entropy_max.toFixed(3) + " nats)" +
      (summary.induction ? "; induction: " + summary.induction.title : "") +
      ". Click a column to sort, a row to see its map.";
    var top = scroll.scrollTop;
    root.AttnkitHeadsTable.render($("pt-heads-table"), summary, state.heads, pick);
    scroll.scrollTop = top;  // a new answer keeps the reader's place
  }

  /** A row of the heads table clicked: its layer's and head's map. */
  function pick(layer, head) {
    $("pt-layer").value = String(layer);
    $("pt-head").value = String(head);
    if (mapKind() === "rollout") $("pt-map").value = "attention";
    run();
  }

  /** Whether a map is too big for table cells: painted on a canvas instead. */
  function isLong(rows, cols) {
    return rows > LONG || cols > LONG || rows * cols > MAX_TABLE_CELLS;
  }

  function drawMap(box, map, opts) {
    if (isLong(map.rows.length, map.cols.length)) return drawCanvas(box, map, opts);
    return H.draw(box, map, opts);
  }

  /** The map painted one pixel per weight, then scaled up unsmoothed onto the shown canvas. */
  function paint(map, vmax) {
    var rows = map.rows.length, cols = map.cols.length, pixels = document.createElement("canvas");
    pixels.width = cols;
    pixels.height = rows;
    var g = pixels.getContext("2d"), image = g.createImageData(cols, rows);
    map.weights.forEach(function (row, i) {
      row.forEach(function (w, j) {
        var c = H.colour(w, vmax).rgb, k = 4 * (i * cols + j);
        image.data[k] = c[0];
        image.data[k + 1] = c[1];
        image.data[k + 2] = c[2];
        image.data[k + 3] = 255;
      });
    });
    g.putImageData(image, 0, 0);
    return pixels;
  }

  function drawLabels(g, map, cell, margin) {
    g.fillStyle = "#374151";
    g.font = Math.min(cell, 12) + "px ui-monospace, Menlo, Consolas, monospace";
    g.textAlign = "right";
    g.textBaseline = "middle";
    map.rows.forEach(function (t, i) {
      g.fillText(H.showToken(t).slice(0, 14), margin - 4, margin + (i + 0.5) * cell);
    });
    map.cols.forEach(function (t, j) {
      g.save();
      g.translate(margin + (j + 0.5) * cell, margin - 4);
      g.rotate(-Math.PI / 2);
      g.textAlign = "left";
      g.fillText(H.showToken(t).slice(0, 14), 0, 0);
      g.restore();
    });
  }

  function drawCanvas(container, map, opts) {
    var rows = map.rows.length, cols = map.cols.length;
    var vmax = H.maxWeight([map]) || 1;
    var cell = Math.max(1, Math.min(12, Math.floor(WIDTH / Math.max(rows, cols, 1))));
    var margin = cell >= 8 ? LABEL_PX : 0;  // labels only where a row is tall enough to read
    var box = document.createElement("div"), canvas = document.createElement("canvas");
    box.className = "hm-box";
    if (map.title) {
      var title = document.createElement("div");
      title.className = "hm-title";
      title.textContent = map.title + " (" + rows + " \u00d7 " + cols + ", hover to read)";
      box.appendChild(title);
    }
    canvas.className = "pt-canvas";
    canvas.width = margin + cols * cell;
    canvas.height = margin + rows * cell;
    canvas.setAttribute("data-rows", rows);
    canvas.setAttribute("data-cols", cols);
    var g = canvas.getContext("2d");
    g.imageSmoothingEnabled = false;
    g.drawImage(paint(map, vmax), margin, margin, cols * cell, rows * cell);
    if (margin) drawLabels(g, map, cell, margin);
    var tip = opts.tooltip;
    canvas.addEventListener("mousemove", function (e) {
      var r = canvas.getBoundingClientRect();
      var j = Math.floor((e.clientX - r.left - margin) / cell);
      var i = Math.floor((e.clientY - r.top - margin) / cell);
      if (!tip || i < 0 || j < 0 || i >= rows || j >= cols) { if (tip) tip.hidden = true; return; }
      tip.textContent = H.showToken(map.rows[i]) + " <- " + H.showToken(map.cols[j]) + ": " +
        Number(map.weights[i][j]).toFixed(4) + "  (" + (i + 1) + ", " + (j + 1) + ")";
      tip.style.left = (e.pageX + 12) + "px";
      tip.style.top = (e.pageY + 12) + "px";
      tip.hidden = false;
    });
    canvas.addEventListener("mouseleave", function () { if (tip) tip.hidden = true; });
    box.appendChild(canvas);
    if (opts.legend) box.appendChild(H.legend(vmax, opts.legendLabel));
    container.appendChild(box);
    return box;
  }

  function configure(m) {
    var part = $("pt-part");
    part.textContent = "";
    (m.parts || []).forEach(function (name) { part.appendChild(option(name, name)); });
    // a translation's cross-attention first, as attnkit's translations show theirs
    if ((m.parts || []).indexOf("cross") >= 0) part.value = "cross";
    fillCount($("pt-layer"), m.layers);
    fillCount($("pt-head"), m.heads);
    canInduce();
    var image = m.reads === "images";
    $("pt-text").hidden = $("pt-enter").hidden = image;
    $("pt-image-row").hidden = !image;
    $("pt-new-label").hidden = !writes(m);
    var most = m.limits ? m.limits.max_new_tokens : null;
    if (most) {
      $("pt-new").max = most;
      if ((parseInt($("pt-new").value, 10) || 1) > most) $("pt-new").value = most;
    }
  }

  function start(m) {
    state.model = m.name;
    state.info = m;
    state.result = null;
    configure(m);
    $("pt-results").hidden = true;
    root.AttnkitApi.prefill($("pt-text"), m.example);  // none for an image model
    run();
  }

  /** A picture chosen: kept (with a URL the page draws it from) and run. */
  function choosePicture() {
    var file = $("pt-image").files[0];
    if (state.picture) URL.revokeObjectURL(state.picture.url);
    state.picture = file ? {blob: file, url: URL.createObjectURL(file)} : null;
    run();
  }

  function wire() {
    $("pt-image").addEventListener("change", choosePicture);
    $("pt-text").addEventListener("input", later);
    $("pt-text").addEventListener("keydown", function (e) {
      if (e.key !== "Enter" || e.shiftKey || e.isComposing) return;
      e.preventDefault();
      run();
    });
    var ids = ["pt-part", "pt-layer", "pt-head", "pt-map", "pt-words", "pt-new", "pt-heads",
      "pt-induction"];
    ids.forEach(function (id) {
      $(id).addEventListener("change", run);
    });
  }

  root.AttnkitPretrained = {start: start, wire: wire, state: state, isLong: isLong};
})(window);
