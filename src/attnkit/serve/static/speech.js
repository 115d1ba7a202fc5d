/*
 * The speech view of the explorer (speech models): type a number and pick a language to hear it
 * synthesised, or choose a WAV file; see the digits heard, the spectrogram with each output's
 * attention (a CTC model's per-frame posteriors) and the words' boundaries, and play the audio
 * with a cursor that follows it (POST v1/transcribe; drawn by viz/static/listening.js).
 */
(function (root) {
  "use strict";
  var $ = function (id) { return document.getElementById(id); };
  var state = {model: null, seq: 0};

  function showError(err) {
    var box = $("error");
    if (!err) { box.hidden = true; box.textContent = ""; return; }
    box.textContent = (err.field ? err.field + ": " : "") + err.message;
    box.hidden = false;
  }

  function ask(body) {
    var seq = ++state.seq;  // an earlier answer arriving late is dropped
    body.model = state.model;
    showError(null);
    return root.AttnkitApi.transcribe(body).then(function (result) {
      if (seq !== state.seq) return;
      var view = $("speech-result");
      view.textContent = "";
      $("speech-heard").textContent = result.digits || "(nothing)";
      $("speech-spoken").textContent = result.spoken ? "(spoken: " + result.spoken + ")" : "";
      root.AttnkitListening.draw(view, result, {heard: false});  // the line above says it
    }, function (err) { if (seq === state.seq) showError(err); });
  }

  function hear() {
    ask({language: $("speech-language").value, number: $("speech-number").value.trim()});
  }

  function upload() {
    var file = $("speech-wav").files[0];
    if (!file) return;
    var reader = new FileReader();
    reader.onload = function () {  // a data: URI; the API takes the base64 after the comma
      ask({wav: String(reader.result).split(",")[1] || ""});
    };
    reader.readAsDataURL(file);
  }

  root.AttnkitSpeech = {
    wire: function () {
      $("speech-hear").addEventListener("click", hear);
      $("speech-number").addEventListener("keydown", function (e) {
        if (e.key === "Enter") hear();
      });
      $("speech-wav").addEventListener("change", upload);
    },
    start: function (m) {
      state.model = m.name;
      var select = $("speech-language");
      select.textContent = "";
      (m.languages || []).forEach(function (lang) {
        var o = document.createElement("option");
        o.value = o.textContent = lang;
        select.appendChild(o);
      });
      // the model's example number, in its language, unless the user typed a number
      var ex = m.example || {};
      if (root.AttnkitApi.prefill($("speech-number"), ex.number) && ex.language) {
        select.value = ex.language;
      }
      if ($("speech-number").value.trim()) hear();
    }
  };
})(window);
