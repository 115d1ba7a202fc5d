/*
 * The vision view: a test image by index, or a digit drawn on the canvas (downsampled to
 * 28 x 28 and sent as a PNG), then the prediction and where the model looked, step by step:
 * its attention over the image's regions, or its glimpse path (RAM), with play/pause and a
 * step slider.
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

  function byIndex() {
    var index = parseInt($("image-index").value, 10);
    request(root.AttnkitApi.classifyIndex(state.model, isNaN(index) ? $("image-index").value : index));
  }

  /** The drawing, 28 x 28 like the test digits (white on black), as a PNG upload. */
  function byDrawing() {
    var small = document.createElement("canvas");
    small.width = small.height = SIDE;
    var g = small.getContext("2d");
    g.imageSmoothingEnabled = true;
    g.drawImage($("pad"), 0, 0, SIDE, SIDE);
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

  root.AttnkitVision = {start: start, wire: wire, state: state};
})(window);
