/*
 * Audio heard, drawn: `window.AttnkitListening.draw(box, data, options)` (the explorer's speech
 * view loads this file from /static; attnkit.viz.inline.listening_html wraps it in a function
 * that defines `id`, the inline view's container, and draws its data there). The log-mel
 * spectrogram; beneath it one row per output with its weights over the frames (attention; CTC's
 * per-frame posteriors), the gold words' boundaries, and an audio player. While the audio plays
 * (or is seeked, or the picture is clicked) a cursor marks the frame heard and the output
 * weighing that frame most is highlighted. Data: features (T, F), weights (U, S) over listener
 * frames of `stride` feature frames, each feature frame `hop` samples at `rate` Hz. The first
 * line names the outputs heard and what the rows hold; `options.heard === false` leaves the
 * outputs out of it (the explorer's page says what was heard on a line of its own).
 */
(function (root) {
  "use strict";
  if (root.AttnkitListening) return;

  function draw(box, data, options) {
    var T = data.features.length, F = T ? data.features[0].length : 0;
    var U = data.weights.length, S = U ? data.weights[0].length : 0;
    var XS = Math.max(1, Math.min(4, Math.floor(900 / Math.max(T, 1))));  // pixels per frame
    var YS = 3, ROW = 16, LABEL = 34, spectH = F * YS, H = spectH + 4 + U * ROW;

    function el(tag, cls, text) {
      var e = document.createElement(tag);
      if (cls) e.className = cls;
      if (text !== undefined && text !== null) e.textContent = text;
      return e;
    }

    // a few stops of magma (spectrogram) and viridis (weights), interpolated linearly
    var MAGMA = [[0, 0, 4], [81, 18, 124], [183, 55, 121], [252, 137, 97], [252, 253, 191]];
    var VIRIDIS = [[68, 1, 84], [59, 82, 139], [33, 145, 140], [94, 201, 98], [253, 231, 37]];
    function colour(stops, v) {
      v = Math.max(0, Math.min(1, v)) * (stops.length - 1);
      var i = Math.min(Math.floor(v), stops.length - 2), f = v - i, a = stops[i], b = stops[i + 1];
      return "rgb(" + [0, 1, 2].map(function (k) { return Math.round(a[k] + f * (b[k] - a[k])); })
        .join(",") + ")";
    }

    var lo = Infinity, hi = -Infinity;
    data.features.forEach(function (row) {
      row.forEach(function (v) { lo = Math.min(lo, v); hi = Math.max(hi, v); });
    });
    var wmax = 0;
    data.weights.forEach(function (row) { row.forEach(function (v) { wmax = Math.max(wmax, v); }); });

    var rows = data.weights_are === "posterior" ? "per-frame posterior of each output label" :
      "attention of each output";
    var head = el("div", "attnkit-line", (options || {}).heard === false ? rows :
      "heard: " + data.outputs.join(" ") + "  (" + rows + ")");
    box.appendChild(head);
    var audio = el("audio", "attnkit-audio");
    audio.controls = true;
    audio.preload = "auto";
    audio.src = data.audio;
    audio.style.display = "block";
    box.appendChild(audio);

    var stage = el("div", "attnkit-stage");
    stage.style.cssText = "position:relative;width:" + (LABEL + T * XS) + "px;margin-top:4px";
    var canvas = el("canvas", "attnkit-spectrogram");
    canvas.width = LABEL + T * XS;
    canvas.height = H;
    canvas.style.cursor = "pointer";
    stage.appendChild(canvas);
    var cursor = el("div", "attnkit-cursor");
    cursor.style.cssText = "position:absolute;top:0;width:2px;height:" + H +
      "px;background:#4dd0e1;pointer-events:none;left:" + LABEL + "px";
    stage.appendChild(cursor);
    var labels = [];
    data.outputs.forEach(function (label, u) {
      var tag = el("span", "attnkit-output", label);
      tag.style.cssText = "position:absolute;left:0;width:" + (LABEL - 4) + "px;text-align:right;" +
        "font-size:12px;line-height:" + ROW + "px;top:" + (spectH + 4 + u * ROW) + "px";
      stage.appendChild(tag);
      labels.push(tag);
    });
    box.appendChild(stage);
    var caption = el("div", "attnkit-now-caption", " ");
    box.appendChild(caption);

    var ctx = canvas.getContext("2d");
    for (var t = 0; t < T; t++) {
      for (var f = 0; f < F; f++) {  // low bands at the bottom
        ctx.fillStyle = colour(MAGMA, (data.features[t][f] - lo) / ((hi - lo) || 1));
        ctx.fillRect(LABEL + t * XS, (F - 1 - f) * YS, XS, YS);
      }
    }
    for (var u = 0; u < U; u++) {
      for (var s = 0; s < S; s++) {
        ctx.fillStyle = colour(VIRIDIS, data.weights[u][s] / (wmax || 1));
        var x0 = s * data.stride, x1 = Math.min((s + 1) * data.stride, T);
        if (x1 > x0) ctx.fillRect(LABEL + x0 * XS, spectH + 4 + u * ROW, (x1 - x0) * XS, ROW - 1);
      }
    }
    ctx.font = "10px system-ui,sans-serif";
    data.words.forEach(function (w) {  // [label, first frame, stop frame]
      ctx.strokeStyle = "rgba(255,255,255,0.7)";
      ctx.setLineDash([3, 2]);
      [w[1], w[2]].forEach(function (edge) {
        ctx.beginPath();
        ctx.moveTo(LABEL + edge * XS, 0);
        ctx.lineTo(LABEL + edge * XS, H);
        ctx.stroke();
      });
      ctx.fillStyle = "white";
      ctx.textAlign = "center";
      ctx.fillText(w[0], LABEL + (w[1] + w[2]) / 2 * XS, 11);
    });

    // the feature frame heard at `seconds`, and the output weighing its listener frame most
    function moment(seconds) {
      var frame = Math.max(0, Math.min(T - 1, Math.floor(seconds * data.rate / data.hop)));
      var s = Math.min(S - 1, Math.floor(frame / data.stride)), best = -1, top = -Infinity;
      for (var u = 0; u < U; u++) {
        if (s >= 0 && data.weights[u][s] > top) { top = data.weights[u][s]; best = u; }
      }
      return {frame: frame, output: best};
    }

    function follow() {
      var now = moment(audio.currentTime || 0);
      cursor.style.left = (LABEL + now.frame * XS) + "px";
      box.setAttribute("data-frame", now.frame);
      box.setAttribute("data-output", now.output);
      labels.forEach(function (tag, u) {
        tag.classList.toggle("attnkit-now", u === now.output);
        tag.style.background = u === now.output ? "#4dd0e1" : "";
        tag.style.fontWeight = u === now.output ? "bold" : "";
      });
      caption.textContent = "frame " + now.frame + " (" + (audio.currentTime || 0).toFixed(2) +
        " s)" + (now.output >= 0 ? ": output " + JSON.stringify(data.outputs[now.output]) +
        " weighs it most" : "");
    }

    function playing() {
      follow();
      if (!audio.paused && !audio.ended) window.requestAnimationFrame(playing);
    }
    audio.addEventListener("play", playing);
    ["timeupdate", "seeked", "pause", "ended"].forEach(function (name) {
      audio.addEventListener(name, follow);
    });
    canvas.addEventListener("click", function (event) {  // click to hear from that frame
      var box = canvas.getBoundingClientRect(), frame = (event.clientX - box.left - LABEL) / XS;
      if (frame >= 0) audio.currentTime = Math.min(frame, T) * data.hop / data.rate;
    });
    follow();
  }

  root.AttnkitListening = {draw: draw};
})(window);

if (typeof id !== "undefined") {  // an inline view: its container and data
  (function () {
    var box = document.getElementById(id);
    var still = box.querySelector("img.attnkit-static");
    if (still) still.remove();  // the live view replaces the static picture
    window.AttnkitListening.draw(box, JSON.parse(document.getElementById(id + "-data").textContent));
  })();
}
