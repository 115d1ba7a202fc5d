/*
 * The n-best hypotheses as a prefix tree (shared prefixes merged), drawn in SVG: one node per
 * distinct prefix, labelled with its last token, leaves with the hypothesis' score. Depth runs
 * left to right; leaves are stacked top to bottom in n-best order.
 */
(function (root) {
  "use strict";
  var NS = "http://www.w3.org/2000/svg", DX = 40, DY = 30, PAD = 16;

  /** The prefix tree of hypotheses [{tokens, score}]: nodes {token, children, hyp, depth}. */
  function prefixTree(hyps) {
    var rootNode = {token: "<s>", children: [], hyp: null, depth: 0};
    hyps.forEach(function (h, k) {
      var node = rootNode;
      h.tokens.forEach(function (t) {
        var next = node.children.find(function (c) { return c.token === t; });
        if (!next) {
          next = {token: t, children: [], hyp: null, depth: node.depth + 1};
          node.children.push(next);
        }
        node = next;
      });
      if (node.hyp === null) node.hyp = k;  // two equal hypotheses share a leaf
    });
    return rootNode;
  }

  /** y of every node: leaves in order, an inner node midway between its first and last child. */
  function layout(node, next) {
    if (!node.children.length) {
      node.y = next.row++;
    } else {
      node.children.forEach(function (c) { layout(c, next); });
      node.y = (node.children[0].y + node.children[node.children.length - 1].y) / 2;
    }
    if (node.hyp !== null && node.children.length) node.y = next.row++;  // ends inside a longer one
    return next.row;
  }

  function svg(tag, attrs, text) {
    var e = document.createElementNS(NS, tag);
    Object.keys(attrs).forEach(function (k) { e.setAttribute(k, attrs[k]); });
    if (text !== undefined) e.textContent = text;
    return e;
  }

  function walk(node, visit) {
    visit(node);
    node.children.forEach(function (c) { walk(c, visit); });
  }

  /** Draw hyps into container; onPick(k) is called when leaf k is clicked; `shown` highlighted. */
  function draw(container, hyps, shown, onPick) {
    container.textContent = "";
    if (!hyps.length) return;
    var tree = prefixTree(hyps), rows = layout(tree, {row: 0}), depth = 0;
    walk(tree, function (n) { depth = Math.max(depth, n.depth); });
    var width = PAD * 2 + depth * DX + 90, height = PAD * 2 + Math.max(rows - 1, 0) * DY + 10;
    var pic = svg("svg", {width: width, height: height, "class": "beamtree"});
    var at = function (n) { return [PAD + n.depth * DX, PAD + n.y * DY]; };
    walk(tree, function (n) {
      n.children.forEach(function (c) {
        var a = at(n), b = at(c);
        pic.appendChild(svg("path", {"class": "edge",
          d: "M" + a[0] + "," + a[1] + " C" + (a[0] + DX / 2) + "," + a[1] + " " +
            (b[0] - DX / 2) + "," + b[1] + " " + b[0] + "," + b[1]}));
      });
    });
    walk(tree, function (n) {
      var p = at(n), g = svg("g", {"class": "node" + (n.hyp !== null ? " leaf" : "") +
        (n.hyp === shown ? " shown" : ""), transform: "translate(" + p[0] + "," + p[1] + ")"});
      g.appendChild(svg("circle", {r: 4}));
      g.appendChild(svg("text", {x: 0, y: -7, "text-anchor": "middle", "class": "tok"},
        root.AttnkitHeatmap.showToken(n.token)));
      if (n.hyp !== null) {
        g.setAttribute("data-hyp", n.hyp);
        g.appendChild(svg("text", {x: 9, y: 4, "class": "score"}, hyps[n.hyp].score.toFixed(3)));
        g.addEventListener("click", function () { onPick(n.hyp); });
      }
      pic.appendChild(g);
    });
    container.appendChild(pic);
  }

  root.AttnkitBeamTree = {prefixTree: prefixTree, draw: draw};
})(window);
