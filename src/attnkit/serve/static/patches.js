/*
 * An image model's map over its picture (the pretrained view, ViT): the picture as the model
 * reads it (stretched to a square), each patch shaded by the weight one query gives it in the
 * chosen (T x T) map: the [CLS] row, the query a classifier's answer is read from. `patches`
 * is the answer's grid: {rows, cols, first}, patch (r, c) being position first + r * cols + c.
 */
(function (root) {
  "use strict";
  var SIDE = 288;

  /** The weights query `row` gives the patches, as a rows x cols grid. */
  function grid(weights, patches, row) {
    var out = [];
    for (var r = 0; r < patches.rows; r++) {
      var line = [];
      for (var c = 0; c < patches.cols; c++) {
        line.push(weights[row][patches.first + r * patches.cols + c]);
      }
      out.push(line);
    }
    return out;
  }

  /** Draw `map` ({weights, rows, title}) over the picture at `url` into `box`. */
  function draw(box, map, patches, url, opts) {
    var query = 0;  // [CLS]
    var title = (map.rows[query] || "query 1") + " over the patches: " + map.title;
    return root.AttnkitHeatmap.overlay(box, url, {attention: grid(map.weights, patches, query)}, {
      tooltip: opts.tooltip, float: true, side: SIDE, cellName: "patch", title: title
    });
  }

  root.AttnkitPatches = {draw: draw, grid: grid};
})(window);
