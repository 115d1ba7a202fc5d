/*
 * The explorer page's start: list the models (GET /v1/models), and show the text view for a
 * seq2seq model, the vision view for a vision model, the graph view for a graph model, the
 * sentence view for a text classifier, the memory view for a memory network, the pointer view
 * for a pointer network, the pretrained view for a Hugging Face model or the speech view for a
 * speech model.
 */
(function (root) {
  "use strict";
  var $ = function (id) { return document.getElementById(id); };
  var models = [];
  var VIEWS = {
    seq2seq: "text-view", vision: "vision-view", graph: "graph-view", text: "sentence-view",
    memnet: "memory-view", pointer: "pointer-view", hf: "pretrained-view", speech: "speech-view"
  };

  function choose(name) {
    var m = models.find(function (o) { return o.name === name; });
    if (!m) return;
    Object.keys(VIEWS).forEach(function (family) { $(VIEWS[family]).hidden = family !== m.family; });
    $("model-info").textContent = m.family + " \u00b7 " + m.task + " \u00b7 attention: " +
      m.attention + (m.layers ? " \u00b7 " + m.layers + " layers" : "") +
      (m.heads ? " \u00d7 " + m.heads + " heads" : "");
    $("error").hidden = true;
    // each view opens on the model's example (m.example), decoded, unless the user typed
    if (m.family === "vision") root.AttnkitVision.start(name);
    else if (m.family === "graph") root.AttnkitGraph.start(m);
    else if (m.family === "text") root.AttnkitSentence.start(m);
    else if (m.family === "memnet") root.AttnkitMemory.start(m);
    else if (m.family === "pointer") root.AttnkitPointer.start(m);
    else if (m.family === "hf") root.AttnkitPretrained.start(m);
    else if (m.family === "speech") root.AttnkitSpeech.start(m);
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
    root.AttnkitSentence.wire();
    root.AttnkitMemory.wire();
    root.AttnkitPointer.wire();
    root.AttnkitPretrained.wire();
    root.AttnkitSpeech.wire();
    $("model").addEventListener("change", function () { choose($("model").value); });
    root.AttnkitApi.models().then(function (body) { fill(body.models); }, function (err) {
      $("error").textContent = (err.field ? err.field + ": " : "") + err.message;
      $("error").hidden = false;
    }).then(function () { document.body.setAttribute("data-ready", "1"); });
  });
})(window);
