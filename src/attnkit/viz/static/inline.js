/*
 * One inline view of the Python API's results (attnkit.viz.inline wraps this file in a
 * function that defines `id`, the view's container): a seq2seq map with a choice of the mean or
 * any layer's head (a Transformer) and of attention or saliency (an explanation), a copying
 * model's p_gen per output step beside its map, or a
 * classified image with a step slider. Drawing uses the shared renderer, window.AttnkitHeatmap.
 */
var box = document.getElementById(id);
var data = JSON.parse(document.getElementById(id + "-data").textContent);

function el(tag, cls, text) {
  var e = document.createElement(tag);
  if (cls) e.className = cls;
  if (text !== undefined && text !== null) e.textContent = text;
  return e;
}

// "" = the attention (a Transformer's: the mean of its heads), "l,h" = one head of
// heads[t][l][h][s], "saliency" = the record's gradient saliency
function pick(rec, choice) {
  if (!choice) return rec.weights;
  if (choice === "saliency") return rec.saliency;
  var lh = choice.split(",");
  return rec.heads.map(function (step) { return step[+lh[0]][+lh[1]]; });
}

function choices(rec) {
  var options = [["", rec.heads ? "mean of all layers and heads" : "attention"]];
  (rec.heads && rec.heads.length ? rec.heads[0] : []).forEach(function (heads, l) {
    heads.forEach(function (_, h) {
      options.push([l + "," + h, "layer " + (l + 1) + ", head " + (h + 1)]);
    });
  });
  if (rec.saliency) options.push(["saliency", "saliency (implicit attention)"]);
  return options;
}

function seq2seq() {
  var rec = data.record, map = el("div", "attnkit-map");
  box.appendChild(el("div", "attnkit-line", rec.source + "  \u2192  " + rec.output));
  function draw(choice) {
    map.textContent = "";
    window.AttnkitHeatmap.draw(map, {rows: rec.output_tokens, cols: rec.source_tokens,
      weights: pick(rec, choice), gold: rec.gold || null, title: data.title || null},
      {cell: 27, legend: true, legendLabel: choice === "saliency" ? "saliency" : "attention"});
    if (rec.p_gen) {  // a copying model: p_gen of every output step, a column beside the map
      window.AttnkitHeatmap.draw(map, {rows: rec.output_tokens, cols: ["p_gen"],
        weights: rec.p_gen.map(function (p) { return [p]; }), gold: null,
        title: "p_gen (1 write, 0 copy)"}, {cell: 27, vmax: 1});
    }
  }
  var options = choices(rec);
  if (options.length > 1) {
    var select = el("select", "attnkit-choice");
    options.forEach(function (o) {
      var option = el("option", null, o[1]);
      option.value = o[0];
      select.appendChild(option);
    });
    select.addEventListener("change", function () { draw(select.value); });
    box.appendChild(select);
  }
  box.appendChild(map);
  draw("");
}

function vision() {
  var label = "prediction: " + data.prediction + (data.label !== null && data.label !== undefined
    ? "  (true: " + data.label + ")" : "");
  box.appendChild(el("div", "attnkit-line", label));
  var slider = el("input", "attnkit-step"), caption = el("span", "attnkit-step-label");
  slider.type = "range";
  slider.min = 0;
  slider.max = Math.max(data.steps.length - 1, 0);
  slider.value = 0;
  var frame = el("div", "attnkit-frame");
  function draw() {
    var k = +slider.value, step = data.steps[k] || null;
    var path = data.steps.slice(0, k + 1).map(function (s) { return s.glimpse; })
      .filter(function (g) { return g; });
    caption.textContent = data.steps.length ? " step " + (k + 1) + "/" + data.steps.length +
      (step && step.token ? ": " + step.token : "") : " no steps";
    frame.textContent = "";
    window.AttnkitHeatmap.overlay(frame, data.image, step,
      {path: path, scale: data.image.length > 40 ? 4 : 8});
  }
  slider.addEventListener("input", draw);
  if (data.steps.length > 1) {
    box.appendChild(slider);
    box.appendChild(caption);
  }
  box.appendChild(frame);
  draw();
}

var still = box.querySelector("img.attnkit-static");
if (still) still.remove();  // the live view replaces the static picture
if (data.kind === "vision") vision(); else seq2seq();
