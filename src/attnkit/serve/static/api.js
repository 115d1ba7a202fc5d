/*
 * Calls to the attnkit serve API (the contract in docs/SERVE.md). Every failure becomes an
 * Error with .field and .status, so the page can show it inline: the API's own
 * {"error": {"field", "message"}}, or a line saying what else went wrong.
 */
(function (root) {
  "use strict";

  function apiError(status, field, message) {
    // a message that names its field already is shown once: "index: ...", not "index: index: ..."
    if (field && message && message.indexOf(field + ": ") === 0) {
      message = message.slice(field.length + 2);
    }
    var e = new Error(message);
    e.status = status;
    e.field = field || null;
    return e;
  }

  function read(response) {
    return response.text().then(function (text) {
      var body = null;
      try { body = text ? JSON.parse(text) : null; } catch (ignored) { body = null; }
      if (response.ok && body !== null) return body;
      if (body && body.error) {
        throw apiError(response.status, body.error.field, body.error.message);
      }
      if (body && body.detail) {  // FastAPI's own errors (e.g. a route it does not know)
        var detail = typeof body.detail === "string" ? body.detail : JSON.stringify(body.detail);
        throw apiError(response.status, null, detail);
      }
      throw apiError(response.status, null, "HTTP " + response.status + " " +
        (response.statusText || "") + (response.ok ? ": not JSON" : ""));
    });
  }

  function send(url, init) {
    return fetch(url, init).then(read, function () {
      throw apiError(0, null, "the server did not answer (is attnkit serve running?)");
    });
  }

  root.AttnkitApi = {
    models: function () { return send("v1/models"); },
    /**
     * A model's example (GET /v1/models' `example`) into an input box, so that its view opens on
     * an answer; never over what the user typed: the box is written only while it is empty or
     * still holds the example put there before. True when it was written.
     */
    prefill: function (box, value) {
      var text = value === null || value === undefined ? "" : String(value);
      if (box.value.trim() && box.value !== box.getAttribute("data-prefilled")) return false;
      box.value = text;
      box.setAttribute("data-prefilled", text);
      return true;
    },
    translate: function (body) {
      return send("v1/translate", {method: "POST", headers: {"Content-Type": "application/json"},
        body: JSON.stringify(body)});
    },
    graphNode: function (model, node) {
      return send("v1/graph/node", {method: "POST", headers: {"Content-Type": "application/json"},
        body: JSON.stringify({model: model, node: node})});
    },
    classifyText: function (body) {
      return send("v1/classify_text", {method: "POST",
        headers: {"Content-Type": "application/json"}, body: JSON.stringify(body)});
    },
    answer: function (body) {
      return send("v1/answer", {method: "POST", headers: {"Content-Type": "application/json"},
        body: JSON.stringify(body)});
    },
    solve: function (body) {
      return send("v1/solve", {method: "POST", headers: {"Content-Type": "application/json"},
        body: JSON.stringify(body)});
    },
    transcribe: function (body) {
      return send("v1/transcribe", {method: "POST",
        headers: {"Content-Type": "application/json"}, body: JSON.stringify(body)});
    },
    pretrained: function (body) {
      return send("v1/pretrained", {method: "POST",
        headers: {"Content-Type": "application/json"}, body: JSON.stringify(body)});
    },
    /** A pretrained image model's answer: the picture and the request's JSON, as a form. */
    pretrainedImage: function (body, blob) {
      var form = new FormData();
      form.append("image", blob, blob.name || "image.png");
      form.append("request", JSON.stringify(body));
      return send("v1/pretrained", {method: "POST", body: form});
    },
    classifyIndex: function (model, index) {
      return send("v1/classify", {method: "POST", headers: {"Content-Type": "application/json"},
        body: JSON.stringify({model: model, index: index})});
    },
    classifyImage: function (model, blob) {
      var form = new FormData();
      form.append("model", model);
      form.append("image", blob, "drawing.png");
      return send("v1/classify", {method: "POST", body: form});
    }
  };
})(window);
