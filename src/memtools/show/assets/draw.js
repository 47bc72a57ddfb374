/* memtools show, part 2 of 3: the timeline, a macro event's graph and node tables, as inline SVG/DOM. */
/* --- the timeline: super bands, macro events, entity lanes ------------------------------ */
function drawTimeline(view, opts) {
  var W = 1000, x0 = 110, dur = view.video.duration || 1, lanes = opts.lanes || [];
  var H = 26 + 38 + lanes.length * 12 + 18;
  var sx = function (t) { return x0 + (W - x0 - 6) * t / dur; };
  var root = svg("svg", {viewBox: "0 0 " + W + " " + H, width: "100%", "class": "tl", role: "img"});
  var color = {};
  view.supers.forEach(function (s, i) {
    color[s.id] = PALETTE[i % PALETTE.length];
    var r = svg("rect", {x: sx(s.t0), y: 2, width: Math.max(sx(s.t1) - sx(s.t0), 1), height: 22, fill: color[s.id],
      "fill-opacity": 0.3, "class": "super" + (seen(opts.visited, s.id) ? " visited" : ""),
      "data-id": s.id}, svg("title", {}, s.id + " " + s.label));
    root.appendChild(r);
    if (sx(s.t1) - sx(s.t0) > 40) root.appendChild(svg("text", {x: sx(s.t0) + 4, y: 17, "font-size": 11,
      "font-weight": "bold"}, clip(s.label, Math.floor((sx(s.t1) - sx(s.t0)) / 7))));
  });
  root.appendChild(svg("text", {x: 4, y: 17, "font-size": 11, fill: "#666"}, "super events"));
  root.appendChild(svg("text", {x: 4, y: 47, "font-size": 11, fill: "#666"}, "macro events"));
  view.macros.forEach(function (m, i) {
    var y = 28 + (i % 2) * 6, w = Math.max(sx(m.t1) - sx(m.t0), 1.5);
    var cls = "macro" + (opts.selected === m.id ? " sel" : "") + (seen(opts.visited, m.id) ? " visited" : "")
      + (seen(opts.opened, m.id) ? " opened" : "");
    var r = svg("rect", {x: sx(m.t0), y: y, width: w, height: 28, fill: color[m.super] || "#888", "class": cls,
      "data-id": m.id, on: {click: function () { if (opts.onMacro) opts.onMacro(m.id); }}},
      svg("title", {}, m.id + " [" + hms(m.t0) + "-" + hms(m.t1) + "] " + m.label));
    root.appendChild(r);
    if (w > 36) root.appendChild(svg("text", {x: sx(m.t0) + 3, y: y + 18, "font-size": 10, fill: "#fff",
      "pointer-events": "none"}, clip(m.label, Math.floor(w / 6))));
    if (seen(opts.visited, m.id)) root.appendChild(svg("text", {x: sx(m.t0) + 2, y: y - 1,
      "font-size": 9, fill: "#e15759", "font-weight": "bold"}, "r" + opts.visited[m.id]));
  });
  var where = {};
  view.macros.forEach(function (m) { where[m.id] = m; });
  lanes.forEach(function (lane, i) {
    var y = 70 + i * 12;
    root.appendChild(svg("text", {x: 4, y: y + 8, "font-size": 9, fill: "#444"}, clip(lane.name, 18)));
    lane.macros.forEach(function (id) {
      var m = where[id];
      if (m) root.appendChild(svg("rect", {x: sx(m.t0), y: y + 2, width: Math.max(sx(m.t1) - sx(m.t0), 1), height: 7,
        fill: "#555"}, svg("title", {}, lane.name + " in " + id)));
    });
  });
  var step = [1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 10800, 21600, 43200]
    .filter(function (s) { return dur / s <= 10; })[0] || 86400;
  for (var t = 0; t <= dur; t += step) {
    root.appendChild(svg("text", {x: sx(t), y: H - 3, "font-size": 9, fill: "#777", "text-anchor": "middle"}, hms(t)));
  }
  return root;
}

/* --- a macro event's subgraph as a small graph ----------------------------------------- */
function drawGraph(sub, marks) {
  var cols = [["entity", sub.entities], ["event", sub.events], ["ocr", sub.ocr]];
  var BW = 200, BH = 30, GAP = 10, CX = [60, 370, 680], pos = {};
  var rows = Math.max(1, sub.entities.length, sub.events.length, sub.ocr.length);
  var H = 24 + rows * (BH + GAP), W = 940;
  var root = svg("svg", {viewBox: "0 0 " + W + " " + H, width: "100%", role: "img", "aria-label": "subgraph"});
  var defs = svg("defs");
  Object.keys(CAT).forEach(function (c) {
    defs.appendChild(svg("marker", {id: "arrow-" + c, viewBox: "0 0 8 8", refX: 8, refY: 4, markerWidth: 7,
      markerHeight: 7, orient: "auto-start-reverse"}, svg("path", {d: "M0,0 L8,4 L0,8 z", fill: CAT[c]})));
  });
  root.appendChild(defs);
  ["entities", "micro-events", "on-screen text"].forEach(function (name, i) {
    root.appendChild(svg("text", {x: CX[i], y: 14, "font-size": 11, fill: "#666"}, name));
  });
  cols.forEach(function (col, ci) {
    col[1].forEach(function (n, ri) { pos[n.id] = {x: CX[ci], y: 22 + ri * (BH + GAP), col: ci}; });
  });
  var edges = svg("g");
  sub.edges.forEach(function (e) {
    var a = pos[e[0]], b = pos[e[1]];
    if (!a || !b) return;
    var d, lx, ly, c = CAT[e[3]] || "#888";
    if (a.col === b.col) {
      var side = a.col === 0 ? a.x : a.x + BW, bend = a.col === 0 ? -40 : 40;
      d = "M" + side + "," + (a.y + BH / 2) + " C" + (side + bend) + "," + (a.y + BH / 2) + " " + (side + bend) + ","
        + (b.y + BH / 2) + " " + side + "," + (b.y + BH / 2);
      lx = side + bend * 0.8; ly = (a.y + b.y) / 2 + BH / 2;
    } else {
      var ax = a.col < b.col ? a.x + BW : a.x, bx = a.col < b.col ? b.x : b.x + BW, mx = (ax + bx) / 2;
      d = "M" + ax + "," + (a.y + BH / 2) + " C" + mx + "," + (a.y + BH / 2) + " " + mx + "," + (b.y + BH / 2) + " "
        + bx + "," + (b.y + BH / 2);
      lx = mx; ly = (a.y + b.y) / 2 + BH / 2 - 2;
    }
    edges.appendChild(svg("path", {d: d, stroke: c, "marker-end": "url(#arrow-" + (CAT[e[3]] ? e[3] : "hierarchy") + ")"},
      svg("title", {}, short(e[0]) + " -" + e[2] + "-> " + short(e[1]) + (e[4] ? ": " + e[4] : ""))));
    edges.appendChild(svg("text", {x: lx, y: ly, "class": "elabel", "text-anchor": "middle"}, e[2]));
  });
  cols.forEach(function (col, ci) {
    col[1].forEach(function (n) {
      var p = pos[n.id], cls = "node " + col[0] + (marks.hit === n.id ? " hit" : "") + (seen(marks.visited, n.id) ? " visited" : "");
      root.appendChild(svg("g", {"class": cls, "data-id": n.id}, [
        svg("rect", {x: p.x, y: p.y, width: BW, height: BH, rx: 4}),
        svg("text", {x: p.x + 5, y: p.y + 12, "font-size": 9, fill: "#5b3e96"}, short(n.id)
          + (n.t0 !== undefined ? "  " + hms(n.t0) + "-" + hms(n.t1) : "")),
        svg("text", {x: p.x + 5, y: p.y + 25, "font-size": 11}, clip(n.text, 32)),
        svg("title", {}, n.id + "\n" + n.text + (n.detail ? "\n" + n.detail : ""))]));
    });
  });
  root.insertBefore(edges, root.childNodes[1]);
  return el("div", {"class": "graph"}, root);
}

/* ``macro`` gives the times of nodes that have none of their own (entities live in the whole macro event) */
function nodeTable(title, items, marks, macro) {
  if (!items.length) return null;
  return [el("h3", {}, title + " (" + items.length + ")"), el("table", {"class": "nodes"}, items.map(function (n) {
    var cls = (marks.hit === n.id ? "hit" : "") + (seen(marks.visited, n.id) ? " visited" : "");
    var own = n.t0 !== undefined;
    return el("tr", {"class": cls, id: "node-" + n.id}, [
      el("td", {}, idTag(n.id)),
      el("td", {title: own ? "" : "no time of its own: the macro event's"}, span(own ? n.t0 : macro.t0, own ? n.t1 : macro.t1)),
      el("td", {}, [n.text, n.detail ? el("div", {"class": "muted"}, n.detail) : null])]);
  }))];
}
