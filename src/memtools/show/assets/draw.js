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
  for (var t = 0; t <= dur; t += step) {  // a label near the right edge ends at its tick, so it is not cut off
    root.appendChild(svg("text", {x: sx(t), y: H - 3, "font-size": 9, fill: "#777",
      "text-anchor": W - sx(t) < 24 ? "end" : "middle"}, hms(t)));
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
  var edges = svg("g"), taken = Object.keys(pos).map(function (id) {  // what a label must not cover
    return [pos[id].x, pos[id].y, pos[id].x + BW, pos[id].y + BH]; });
  sub.edges.forEach(function (e) {
    var a = pos[e[0]], b = pos[e[1]];
    if (!a || !b) return;
    var p, c = CAT[e[3]] || "#888", ay = a.y + BH / 2, by = b.y + BH / 2;
    if (a.col === b.col) {
      var side = a.col === 0 ? a.x : a.x + BW, bend = a.col === 0 ? -40 : 40;
      p = [side, ay, side + bend, ay, side + bend, by, side, by];
    } else {
      var ax = a.col < b.col ? a.x + BW : a.x, bx = a.col < b.col ? b.x : b.x + BW, mx = (ax + bx) / 2;
      p = [ax, ay, mx, ay, mx, by, bx, by];
    }
    var d = "M" + p[0] + "," + p[1] + " C" + p.slice(2, 4).join(",") + " " + p.slice(4, 6).join(",") + " " + p.slice(6).join(",");
    edges.appendChild(svg("path", {d: d, stroke: c, "marker-end": "url(#arrow-" + (CAT[e[3]] ? e[3] : "hierarchy") + ")"},
      svg("title", {}, short(e[0]) + " -" + e[2] + "-> " + short(e[1]) + (e[4] ? ": " + e[4] : ""))));
    var at = labelPlace(p, String(e[2]).length * 6.4 + 4, taken, W, H);
    edges.appendChild(svg("text", {x: at[0], y: at[1], "class": "elabel", "text-anchor": "middle"}, e[2]));
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

/* Where an edge's label goes: the first spot along its curve (cubic Bezier ``p``), from the middle outwards and
   then a line above or below, whose box (``w`` wide, estimated from the 9px font) covers no node and no label
   already placed; ``taken`` gains the box. Labels used to sit at the middle only, on top of one another. */
function labelPlace(p, w, taken, W, H) {
  function at(t) {
    var u = 1 - t, k = [u * u * u, 3 * u * u * t, 3 * u * t * t, t * t * t];
    return [k[0] * p[0] + k[1] * p[2] + k[2] * p[4] + k[3] * p[6], k[0] * p[1] + k[1] * p[3] + k[2] * p[5] + k[3] * p[7]];
  }
  function boxOf(x, y) { return [x - w / 2, y - 9, x + w / 2, y + 3]; }
  function free(b) {
    var inside = b[0] >= 0 && b[2] <= W && b[1] >= 0 && b[3] <= H;
    return inside && !taken.some(function (o) { return b[0] < o[2] && o[0] < b[2] && b[1] < o[3] && o[1] < b[3]; });
  }
  var first = at(0.5), shifts = [0, -11, 11, -22, 22];
  for (var i = 0; i < shifts.length; i++) {
    var ts = [0.5, 0.4, 0.6, 0.3, 0.7, 0.2, 0.8, 0.12, 0.88, 0.06, 0.94];
    for (var j = 0; j < ts.length; j++) {
      var q = at(ts[j]), b = boxOf(q[0], q[1] + shifts[i] + 2);
      if (free(b)) { taken.push(b); return [q[0], q[1] + shifts[i] + 2]; }
    }
  }
  taken.push(boxOf(first[0], first[1]));
  return first;
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
