/*
 * The vision view: a test image by index, or a digit drawn on the canvas (downsampled to
 * 28 x 28 and sent as a PNG), then the prediction and where the model looked, step by step:
 * its attention over the image's regions, or its glimpse path (RAM), with play/pause and a
 * step slider. A cleared index box or an empty pad is one line, and nothing is sent.
 */
(function (root) {
  "use strict";
  var $ = function (id) { return document.getElementById(id); };
  var SIDE = 28, FRAME_MS = 700;
  var state = {model: null, answer: null, step: 0, timer: null, drawing: false, seq: 0};

  function showError(err) {
    var box = $("error");
    if (!err) { box.hidden = true; box.textContent = ""; return; }
    box.textContent = (err.field ? err.field + ": " : "") + err.message;
    box.hidden = false;
  }

  function stop() {
    clearInterval(state.timer);
    state.timer = null;
    $("play").textContent = "play";
  }

  function show(answer) {
    stop();
    state.answer = answer;
    state.step = 0;
    $("vision-results").hidden = false;
    $("prediction").textContent = answer.prediction;
    var slider = $("step");
    slider.max = Math.max(answer.steps.length - 1, 0);
    slider.value = 0;
    drawStep();
  }

  /** The image with step `state.step`'s attention, or the glimpses up to it. */
  function drawStep() {
    var a = state.answer, box = $("overlay");
    box.textContent = "";
    if (!a) return;
    var k = state.step, step = a.steps[k] || null;
    var path = a.steps.slice(0, k + 1).map(function (s) { return s.glimpse; })
      .filter(function (g) { return g; });
    var label = a.steps.length ? "step " + (k + 1) + "/" + a.steps.length : "no steps";
    if (step && step.token !== null && step.token !== undefined) label += ": " + step.token;
    $("step-label").textContent = label;
    $("step").value = k;
    root.AttnkitHeatmap.overlay(box, a.image, step, {
      path: path, tooltip: $("tooltip"), float: true, scale: a.image.length > 40 ? 4 : 10
    });
  }

  function request(promise) {
    var seq = ++state.seq;
    $("busy").hidden = false;
    promise.then(function (answer) {
      if (seq !== state.seq) return;
      showError(null);
      show(answer);
    }, function (err) {
      if (seq === state.seq) showError(err);
    }).then(function () { if (seq === state.seq) $("busy").hidden = true; });
  }

  /** Nothing to classify: one line, and no answer of an earlier image left under it. */
  function refuse(message) {
    stop();
    ++state.seq;  // an answer still on its way is no longer wanted
    state.answer = null;
    $("busy").hidden = true;
    $("vision-results").hidden = true;
    $("overlay").textContent = "";
    showError({message: message});
  }

  function byIndex() {
    var text = $("image-index").value.trim();
    if (!/^[0-9]+$/.test(text)) {  // cleared, or not a whole number: say so, send nothing
      refuse("test image: type its number (0, 1, 2, ...), or draw a digit");
      return;
    }
    request(root.AttnkitApi.classifyIndex(state.model, parseInt(text, 10)));
  }

  /**
   * Where MNIST puts a digit: the stroke's bounding box (pixels brighter than 0 in `gray`, a
   * width x height array) scaled to fit 20 x 20 and set in a 28 x 28 frame so that its centre of
   * mass is the frame's centre. Returns {x, y, w, h} (the box in the pad), scale, and dx, dy (where
   * the box's corner goes in the frame), or null for an empty pad.
   */
  function digitBox(gray, width, height) {
    var x0 = width, y0 = height, x1 = -1, y1 = -1, mass = 0, mx = 0, my = 0;
    for (var y = 0; y < height; y++) {
      for (var x = 0; x < width; x++) {
        var v = gray[y * width + x];
        if (v <= 0) continue;
        if (x < x0) x0 = x;
        if (x > x1) x1 = x;
        if (y < y0) y0 = y;
        if (y > y1) y1 = y;
        mass += v; mx += v * (x + 0.5); my += v * (y + 0.5);
      }
    }
    if (x1 < 0) return null;
    var w = x1 - x0 + 1, h = y1 - y0 + 1, scale = 20 / Math.max(w, h);
    // the centre of mass, in the scaled box, goes to the frame's centre (14, 14)
    var cx = (mx / mass - x0) * scale, cy = (my / mass - y0) * scale;
    var dx = Math.min(Math.max(SIDE / 2 - cx, 0), SIDE - w * scale);
    var dy = Math.min(Math.max(SIDE / 2 - cy, 0), SIDE - h * scale);
    return {x: x0, y: y0, w: w, h: h, scale: scale, dx: dx, dy: dy};
  }

  /** The drawing, boxed, scaled and centred as MNIST's digits (white on black), as a PNG upload. */
  function byDrawing() {
    var pad = $("pad"), small = document.createElement("canvas");
    small.width = small.height = SIDE;
    var g = small.getContext("2d");
    g.fillStyle = "#000";
    g.fillRect(0, 0, SIDE, SIDE);
    g.imageSmoothingEnabled = true;
    var rgba = pad.getContext("2d").getImageData(0, 0, pad.width, pad.height).data;
    var gray = new Float32Array(pad.width * pad.height);
    for (var i = 0; i < gray.length; i++) gray[i] = rgba[4 * i];
    var box = digitBox(gray, pad.width, pad.height);
    if (!box) {  // a blank pad is no digit: never classify (nor draw attention over) nothing
      refuse("draw a digit first: the pad is empty");
      return;
    }
    g.drawImage(pad, box.x, box.y, box.w, box.h, box.dx, box.dy, box.w * box.scale,
      box.h * box.scale);
    small.toBlob(function (blob) { request(root.AttnkitApi.classifyImage(state.model, blob)); },
      "image/png");
  }

  function clearPad() {
    var pad = $("pad"), g = pad.getContext("2d");
    g.fillStyle = "#000";
    g.fillRect(0, 0, pad.width, pad.height);
  }

  function stroke(e) {
    if (!state.drawing) return;
    var pad = $("pad"), r = pad.getBoundingClientRect(), g = pad.getContext("2d");
    var x = (e.clientX - r.left) * pad.width / r.width, y = (e.clientY - r.top) * pad.height / r.height;
    g.strokeStyle = "#fff";
    g.lineWidth = pad.width / 7;
    g.lineCap = "round";
    g.beginPath();
    var from = state.last || [x, y];
    g.moveTo(from[0], from[1]);
    g.lineTo(x, y);
    g.stroke();
    state.last = [x, y];
  }

  function playPause() {
    if (state.timer) { stop(); return; }
    if (!state.answer || state.answer.steps.length < 2) return;
    $("play").textContent = "pause";
    state.timer = setInterval(function () {
      state.step = (state.step + 1) % state.answer.steps.length;
      drawStep();
    }, FRAME_MS);
  }

  function wire() {
    var pad = $("pad");
    clearPad();
    pad.addEventListener("pointerdown", function (e) {
      state.drawing = true;
      state.last = null;
      stroke(e);
    });
    pad.addEventListener("pointermove", stroke);
    ["pointerup", "pointerleave"].forEach(function (t) {
      pad.addEventListener(t, function () { state.drawing = false; });
    });
    $("show-index").addEventListener("click", byIndex);
    $("image-index").addEventListener("change", byIndex);
    $("classify-drawing").addEventListener("click", byDrawing);
    $("clear-pad").addEventListener("click", clearPad);
    $("play").addEventListener("click", playPause);
    $("step").addEventListener("input", function () {
      stop();
      state.step = parseInt($("step").value, 10) || 0;
      drawStep();
    });
  }

  function start(name) {
    stop();
    state.model = name;
    state.answer = null;
    $("vision-results").hidden = true;
    byIndex();
  }

  root.AttnkitVision = {start: start, wire: wire, state: state, digitBox: digitBox};
})(window);
