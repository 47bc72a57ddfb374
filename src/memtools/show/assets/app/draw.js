/* memtools timeline, part 2 of 3: one video on a time axis, as inline SVG. Rows from the top: keyframes (each
   joined to its moment on the axis), super events, macro events (click one), the result's marks (hits or
   appearances), the time axis. */
var SVGNS = "http://www.w3.org/2000/svg";
var PALETTE = ["#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#76b7b2", "#b8860b", "#b07aa1", "#d3657a", "#9c755f"];
var TICK_STEPS = [1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 10800, 21600, 43200, 86400];

function el(tag, attrs, kids) { return build(document.createElement(tag), attrs, kids); }
function svg(tag, attrs, kids) { return build(document.createElementNS(SVGNS, tag), attrs, kids); }
function build(node, attrs, kids) {
  Object.keys(attrs || {}).forEach(function (k) {
    if (k === "on") Object.keys(attrs.on).forEach(function (e) { node.addEventListener(e, attrs.on[e]); });
    else if (attrs[k] !== null && attrs[k] !== undefined) node.setAttribute(k, attrs[k]);
  });
  (Array.isArray(kids) ? kids : [kids]).forEach(function (k) {
    if (k === null || k === undefined || k === false) return;
    node.appendChild(typeof k === "object" ? k : document.createTextNode(String(k)));
  });
  return node;
}
function hms(t) {
  t = Math.max(0, Math.floor(t || 0));
  var h = Math.floor(t / 3600), m = Math.floor(t % 3600 / 60), s = t % 60;
  return h + ":" + (m < 10 ? "0" : "") + m + ":" + (s < 10 ? "0" : "") + s;
}
function clip(text, n) { text = String(text || ""); return text.length > n ? text.slice(0, Math.max(n - 1, 0)) + "\u2026" : text; }
/* A clickable SVG shape: mouse, Enter or Space. */
function pressable(attrs, label, action) {
  attrs.tabindex = 0; attrs.role = "button"; attrs["aria-label"] = label;
  attrs.on = {click: action, keydown: function (e) { if (e.key === "Enter" || e.key === " ") { e.preventDefault(); action(); } }};
  return attrs;
}

/* ``v``: {id, title, duration, supers, macros, frames, marks}; ``opts``: {width, selected, onMoment(macroId, t)}. */
function drawVideo(v, opts) {
  var W = Math.max(320, Math.floor(opts.width || 640)), PAD = 8, dur = v.duration || 1;
  var sx = function (t) { return PAD + (W - 2 * PAD) * Math.min(Math.max(t, 0), dur) / dur; };
  var color = {}, y = 0, parts = [], grid = [];
  v.supers.forEach(function (s, i) { color[s.id] = PALETTE[i % PALETTE.length]; });
  if (v.frames.length) {
    var slot = (W - 2 * PAD) / v.frames.length, FH = 54;
    v.frames.forEach(function (f, i) {
      var x = PAD + i * slot + 2, w = slot - 4, cx = x + w / 2;
      var go = function () { opts.onMoment(f.macro, f.t); };
      parts.push(svg("g", pressable({"class": "frame", "data-t": f.t}, "frame at " + hms(f.t), go), [
        svg("rect", {"class": "frame-box", x: x, y: 0, width: w, height: FH, rx: 3}),
        svg("image", {href: f.src, x: x, y: 0, width: w, height: FH, preserveAspectRatio: "xMidYMid slice"}),
        svg("title", {}, hms(f.t) + (f.label ? " " + f.label : ""))]));
      parts.push(svg("line", {"class": "frame-tick", x1: cx, y1: FH, x2: sx(f.t), y2: FH + 10}));
    });
    y = FH + 12;
  }
  var top = y;
  v.supers.forEach(function (s) {
    var x = sx(s.t0), w = Math.max(sx(s.t1) - x, 1);
    parts.push(svg("rect", {"class": "super", x: x, y: y, width: w, height: 20, fill: color[s.id], "fill-opacity": 0.3,
      "data-id": s.id}, svg("title", {}, s.label + " [" + hms(s.t0) + "-" + hms(s.t1) + "]")));
    if (w > 40) parts.push(svg("text", {"class": "super-label", x: x + 4, y: y + 14}, clip(s.label, Math.floor(w / 6.5))));
  });
  y += v.supers.length ? 24 : 0;
  v.macros.forEach(function (m) {
    var x = sx(m.t0), w = Math.max(sx(m.t1) - x, 2), label = m.label + " [" + hms(m.t0) + "-" + hms(m.t1) + "]";
    var cls = "macro" + (opts.selected === m.id ? " sel" : "");
    parts.push(svg("rect", pressable({"class": cls, x: x, y: y, width: w, height: 26, rx: 2, fill: color[m.super] || "#777",
      "data-id": m.id}, "macro event " + label, function () { opts.onMoment(m.id, m.t0); }), svg("title", {}, label)));
    if (w > 40) parts.push(svg("text", {"class": "macro-label", x: x + 4, y: y + 17}, clip(m.label, Math.floor(w / 6.2))));
  });
  y += v.macros.length ? 30 : 0;
  var ends = [];  // marks that overlap go on separate lanes (at most four; then they share the last)
  v.marks.slice().sort(function (a, b) { return a.t0 - b.t0; }).forEach(function (k) {
    var w = Math.max(sx(k.t1) - sx(k.t0), 4), x = Math.min(sx(k.t0), W - PAD - w);
    var lane = ends.findIndex(function (end) { return end < x; });
    lane = lane >= 0 ? lane : Math.min(ends.length, 3);
    ends[lane] = Math.max(ends[lane] || 0, x + w + 2);
    var cls = "mark" + (opts.selected === k.macro ? " sel" : "");
    parts.push(svg("rect", pressable({"class": cls, x: x, y: y + 1 + lane * 9, width: w, height: 7, rx: 2,
      "data-id": k.id}, k.kind + " " + k.label, function () { opts.onMoment(k.macro, k.t0); }),
      svg("title", {}, hms(k.t0) + " " + k.label)));
  });
  y += ends.length * 9 + (ends.length ? 3 : 0);
  var step = TICK_STEPS.filter(function (s) { return dur / s <= Math.max(2, Math.floor((W - 2 * PAD) / 70)); })[0] || 172800;
  for (var t = 0; t <= dur + 1e-9; t += step) {
    var x = sx(t), anchor = x - PAD < 24 ? "start" : W - PAD - x < 24 ? "end" : "middle";  // the edge labels fit
    grid.push(svg("line", {"class": "grid", x1: x, y1: top, x2: x, y2: y + 3}));
    parts.push(svg("text", {"class": "axis", x: x, y: y + 14, "text-anchor": anchor}, hms(t)));
  }
  y += 18;
  return svg("svg", {"class": "tl", viewBox: "0 0 " + W + " " + y, width: W, height: y, role: "group",
    "aria-label": "timeline of " + v.id}, grid.concat(parts));
}
