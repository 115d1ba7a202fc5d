/*
 * The memory view of the explorer (memory networks): paste a story and ask a question; see the
 * answer and each hop's attention over the story's sentences, drawn by the shared heatmap
 * renderer (one row per sentence, one column per hop; the supporting facts of a bAbI question
 * line outlined and starred), and, with "saliency", the gradient saliency beside it
 * (POST v1/answer).
 */
(function (root) {
  "use strict";
  var $ = function (id) { return document.getElementById(id); };
  var state = {model: null, seq: 0, last: null};

  function showError(err) {
    var box = $("error");
    if (!err) { box.hidden = true; box.textContent = ""; return; }
    box.textContent = (err.field ? err.field + ": " : "") + err.message;
    box.hidden = false;
  }

  /** The sentences as row labels and the hops as column labels, written as they are (the
   *  renderer shows a token's spaces, which a sentence has many of). */
  function labelRows(box, labels, columns) {
    var heads = box.querySelectorAll("tbody th");
    for (var i = 0; i < heads.length && i < labels.length; i++) {
      heads[i].textContent = labels[i];
      heads[i].title = labels[i];
    }
    var tops = box.querySelectorAll("thead th");
    for (var j = 1; j < tops.length && j <= columns.length; j++) {
      tops[j].textContent = columns[j - 1];
    }
  }

  function show(result) {
    state.last = result;
    $("memory-results").hidden = false;
    $("memory-answer").textContent = result.answer;
    $("memory-truth").textContent = result.truth === null ? "" :
      (result.truth === result.answer ? "(right)" : "(the story says: " + result.truth + ")");
    var unknown = $("memory-unknown");
    unknown.hidden = !result.unknown.length;
    unknown.textContent = "words the model never saw (read as nothing): " +
      result.unknown.join(", ");
    var labels = result.sentences.map(function (s, i) {
      return (result.supporting.indexOf(i) >= 0 ? "* " : "") + (i + 1) + " " + s;
    });
    var record = result.record, box = $("memory-map");
    box.textContent = "";
    var map = {rows: labels, cols: record.source_tokens, weights: record.weights,
      gold: record.gold || null, title: result.question + " \u2192 " + result.answer};
    var drawn = root.AttnkitHeatmap.draw(box, map, {legend: true, tooltip: $("tooltip"),
      float: true, goldLabel: "outlined: a supporting fact of the question"});
    labelRows(drawn, labels, record.source_tokens);
    if (result.saliency) {
      var sal = {rows: labels, cols: ["saliency"], gold: null, title: "saliency (gradient)",
        weights: result.saliency.map(function (w) { return [w]; })};
      labelRows(root.AttnkitHeatmap.draw(box, sal, {legend: true, tooltip: $("tooltip"),
        float: true}), labels, ["saliency"]);
    }
  }

  function ask() {
    if (!state.model) return;
    var story = $("story").value.split("\n").filter(function (l) { return l.trim(); });
    var question = $("memory-question").value.trim();
    var seq = ++state.seq;
    $("busy").hidden = false;
    root.AttnkitApi.answer({model: state.model, story: story, question: question || null,
      explain: $("memory-saliency").checked}).then(function (body) {
      if (seq !== state.seq) return;
      showError(null);
      show(body);
    }, function (err) {
      if (seq === state.seq) showError(err);
    }).then(function () { if (seq === state.seq) $("busy").hidden = true; });
  }

  function wire() {
    $("memory-ask").addEventListener("click", ask);
    $("memory-question").addEventListener("keydown", function (e) {
      if (e.key === "Enter") ask();
    });
    $("memory-saliency").addEventListener("change", function () { if (state.last) ask(); });
  }

  /** The model chosen: its example story and question (unless the user typed), answered. */
  function start(info) {
    state.model = info.name;
    state.last = null;
    $("memory-results").hidden = true;
    var ex = info.example || {};
    root.AttnkitApi.prefill($("story"), ex.story ? ex.story.join("\n") : "");
    root.AttnkitApi.prefill($("memory-question"), ex.question);
    if ($("story").value.trim()) ask();
  }

  root.AttnkitMemory = {start: start, wire: wire, state: state};
})(window);
