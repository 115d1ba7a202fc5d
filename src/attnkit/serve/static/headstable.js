/*
 * The pretrained view's heads panel: the head summary POST /v1/pretrained gives with heads: true
 * (docs/SERVE.md), one row per layer and head and a column per score. A click on a column's
 * header sorts by it (numbers, highest first; clicked again, lowest first); a click on a row
 * hands its layer and head to onPick. The body scrolls, so BERT-base's 144 rows stay usable.
 */
(function (root) {
  "use strict";
  var TITLES = {layer: "layer", head: "head", entropy: "entropy (nats)",
    sink: "sink share", previous: "previous token", distance: "mean distance",
    induction: "induction"};

  function columns(rows) {
    return rows.length ? Object.keys(rows[0]) : ["layer", "head"];
  }

  function sorted(rows, sort) {
    var out = rows.slice();
    if (!sort) return out;
    out.sort(function (a, b) {  // Array.prototype.sort is stable: ties keep layer, head order
      var d = Number(a[sort.key]) - Number(b[sort.key]);
      return sort.desc ? -d : d;
    });
    return out;
  }

  function cell(tag, text) {
    var c = document.createElement(tag);
    c.textContent = text;
    return c;
  }

  /**
   * Draw summary.rows into table (its thead and tbody). state: {sort: {key, desc} or null,
   * layer, head (the chosen ones, from 1, or null)}, kept by the caller across answers.
   */
  function render(table, summary, state, onPick) {
    var rows = summary.rows || [], keys = columns(rows);
    var head = table.tHead || table.createTHead(), body = table.tBodies[0] ||
      table.appendChild(document.createElement("tbody"));
    head.textContent = "";
    body.textContent = "";
    var tr = head.insertRow();
    keys.forEach(function (key) {
      var arrow = state.sort && state.sort.key === key ? (state.sort.desc ? " \u25bc" : " \u25b2") : "";
      var th = cell("th", (TITLES[key] || key) + arrow);
      th.setAttribute("data-key", key);
      th.title = "sort by " + (TITLES[key] || key);
      th.addEventListener("click", function () {
        var same = state.sort && state.sort.key === key;
        state.sort = {key: key, desc: same ? !state.sort.desc : true};
        render(table, summary, state, onPick);
      });
      tr.appendChild(th);
    });
    sorted(rows, state.sort).forEach(function (row) {
      var r = body.insertRow();
      r.setAttribute("data-layer", row.layer);
      r.setAttribute("data-head", row.head);
      if (row.layer === state.layer && row.head === state.head) r.className = "chosen";
      keys.forEach(function (key) {
        var v = row[key];
        r.appendChild(cell("td", typeof v === "number" && key !== "layer" && key !== "head" ?
          v.toFixed(3) : String(v)));
      });
      r.addEventListener("click", function () { onPick(row.layer, row.head); });
    });
  }

  root.AttnkitHeadsTable = {render: render, sorted: sorted};
})(window);
