/*
 * The explorer page's start: list the models (GET /v1/models), and show the text view for a
 * seq2seq model, the vision view for a vision model or the graph view for a graph model.
 */
(function (root) {
  "use strict";
  var $ = function (id) { return document.getElementById(id); };
  var models = [];

  function choose(name) {
    var m = models.find(function (o) { return o.name === name; });
    if (!m) return;
    var vision = m.family === "vision", graph = m.family === "graph";
    $("text-view").hidden = vision || graph;
    $("vision-view").hidden = !vision;
    $("graph-view").hidden = !graph;
    $("model-info").textContent = m.family + " \u00b7 " + m.task + " \u00b7 attention: " +
      m.attention + (m.layers ? " \u00b7 " + m.layers + " layers" : "") +
      (m.heads ? " \u00d7 " + m.heads + " heads" : "");
    $("error").hidden = true;
    if (vision) root.AttnkitVision.start(name);
    else if (graph) root.AttnkitGraph.start(name);
    else root.AttnkitText.start(models, name);
  }

  function fill(list) {
    models = list;
    var sel = $("model");
    sel.textContent = "";
    list.forEach(function (m) {
      var o = document.createElement("option");
      o.value = m.name;
      o.textContent = m.name + " (" + m.family + ", " + m.attention + ")";
      sel.appendChild(o);
    });
    if (!list.length) {
      $("error").textContent = "the server has no models";
      $("error").hidden = false;
      return;
    }
    choose(list[0].name);
  }

  document.addEventListener("DOMContentLoaded", function () {
    root.AttnkitText.wire();
    root.AttnkitVision.wire();
    root.AttnkitGraph.wire();
    $("model").addEventListener("change", function () { choose($("model").value); });
    root.AttnkitApi.models().then(function (body) { fill(body.models); }, function (err) {
      $("error").textContent = (err.field ? err.field + ": " : "") + err.message;
      $("error").hidden = false;
    }).then(function () { document.body.setAttribute("data-ready", "1"); });
  });
})(window);
