/*
 * report.html's script (attnkit.viz.report inlines it after the shared renderer heatmap.js):
 * clicking an example opens its map, with the reference beside it for a wrong one; the
 * controls above the list show all, the wrong or the right examples and sort them (as decoded,
 * by model score, by chrF, by source length). The wrong ones always come first.
 */
(function () {
  "use strict";
  var data = JSON.parse(document.getElementById("attnkit-data").textContent);

  // the map to draw: "" = the attention (a Transformer's: the mean of its heads), "l,h" = one
  // head of heads[t][layer][head][s], "saliency" = the record's gradient saliency (explain),
  // "rollout" / "flow" = a Transformer's attention rollout / flow through its encoder
  var DERIVED = [["saliency", "saliency (implicit attention)"],
    ["rollout", "attention rollout (all layers)"], ["flow", "attention flow (all layers)"]];

  function pick(rec, choice) {
    if (!choice) return rec.weights;
    if (rec[choice] && choice.indexOf(",") < 0) return rec[choice];
    var lh = choice.split(",");
    return rec.heads.map(function (step) { return step[+lh[0]][+lh[1]]; });
  }

  function mapChoice(rec, draw) {
    var select = document.createElement("select");
    select.className = "heads";
    var options = [["", rec.heads ? "mean of all layers and heads" : "attention"]];
    (rec.heads ? rec.heads[0] : []).forEach(function (heads, l) {
      heads.forEach(function (_, h) {
        options.push([l + "," + h, "layer " + (l + 1) + ", head " + (h + 1)]);
      });
    });
    DERIVED.forEach(function (d) { if (rec[d[0]]) options.push(d); });
    options.forEach(function (o) {
      var option = document.createElement("option");
      option.value = o[0];
      option.textContent = o[1];
      select.appendChild(option);
    });
    select.addEventListener("change", function () { draw(select.value); });
    return select;
  }

  // what the output should have been, shown beside the map of a wrong example
  function beside(rec) {
    var aside = document.createElement("aside");
    aside.className = "beside";
    [["reference", rec.reference]].forEach(function (kv) {
      var k = document.createElement("div"), v = document.createElement("div");
      k.className = "k";
      k.textContent = kv[0];
      v.className = "v";
      v.textContent = kv[1];
      aside.appendChild(k);
      aside.appendChild(v);
    });
    return aside;
  }

  function heatmap(rec, wrong) {
    var box = document.createElement("div"), figure = document.createElement("div");
    box.className = "pic";
    var map = document.createElement("div");
    function draw(choice) {
      map.textContent = "";
      // gold links (where the task has them) outlined on every map
      window.AttnkitHeatmap.draw(map, {rows: rec.output_tokens, cols: rec.source_tokens,
        weights: pick(rec, choice), gold: rec.gold || null}, {cell: 27, legend: true});
    }
    var choices = rec.heads || DERIVED.some(function (d) { return rec[d[0]]; });
    if (choices) figure.appendChild(mapChoice(rec, draw));
    figure.appendChild(map);
    box.appendChild(figure);
    if (wrong && rec.reference !== null) box.appendChild(beside(rec));
    draw("");
    box.addEventListener("click", function (e) { e.stopPropagation(); });
    return box;
  }

  function toggle(li) {
    var old = li.querySelector(".pic");
    var wasLive = old && old.getAttribute("data-live");
    if (old) old.remove();
    if (!wasLive) {
      var wrong = li.getAttribute("data-status") === "wrong";
      var box = heatmap(data.records[+li.getAttribute("data-i")], wrong);
      box.setAttribute("data-live", "1");
      li.appendChild(box);
    }
  }

  var list = document.querySelector("ol.examples");
  var items = Array.prototype.slice.call(document.querySelectorAll("li.ex"));
  items.forEach(function (li) {
    li.addEventListener("click", function () { toggle(li); });
    li.addEventListener("keydown", function (e) {
      if (e.key === "Enter" || e.key === " ") { e.preventDefault(); toggle(li); }
    });
  });
  // one rendering from the start: the pictures written for a page without scripts become the
  // same live maps a click opens
  items.forEach(function (li) {
    var still = li.querySelector(".pic");
    if (still && !still.getAttribute("data-live")) toggle(li);
  });

  // an attribute's number; a missing one (no score) sorts last
  function num(li, key) {
    var v = li.getAttribute("data-" + key);
    return v === null ? Infinity : +v;
  }
  function compare(x, y) { return x < y ? -1 : x > y ? 1 : 0; }
  function wrongFirst(li) { return li.getAttribute("data-status") === "wrong" ? 0 : 1; }

  var filter = document.getElementById("ex-filter"), sort = document.getElementById("ex-sort");
  var showing = document.getElementById("ex-showing");
  function apply() {
    var show = filter.value, key = sort.value, shown = 0;
    items.slice().sort(function (a, b) {
      return compare(wrongFirst(a), wrongFirst(b)) || compare(num(a, key), num(b, key)) ||
        compare(num(a, "order"), num(b, "order"));
    }).forEach(function (li) {
      li.hidden = show !== "all" && li.getAttribute("data-status") !== show;
      if (!li.hidden) shown += 1;
      list.appendChild(li);
    });
    showing.textContent = "showing " + shown + " of " + items.length;
  }
  if (filter && sort) {
    filter.addEventListener("change", apply);
    sort.addEventListener("change", apply);
  }
})();
