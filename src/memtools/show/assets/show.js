/* memtools show: draws a library index, a video page or an answer's trace from the JSON block
   #memtools-data. No network, no libraries: plain DOM and inline SVG. */
(function () {
  "use strict";
  var D = JSON.parse(document.getElementById("memtools-data").textContent);
  var app = document.getElementById("app");
  var crumbs = document.getElementById("crumbs");
  var searchBox = document.getElementById("search");
  var SVGNS = "http://www.w3.org/2000/svg";
  var CAT = {spatial: "#59a14f", role: "#4e79a7", temporal: "#f28e2b", macro_causal: "#e15759",
             progression: "#b07aa1", hierarchy: "#999999", grounding: "#999999"};
  var PALETTE = ["#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#76b7b2", "#edc948", "#b07aa1", "#ff9da7", "#9c755f"];

  function el(tag, attrs, kids) {
    var node = document.createElement(tag);
    Object.keys(attrs || {}).forEach(function (k) {
      if (k === "on") { Object.keys(attrs.on).forEach(function (e) { node.addEventListener(e, attrs.on[e]); }); }
      else if (attrs[k] !== null && attrs[k] !== undefined) { node.setAttribute(k, attrs[k]); }
    });
    add(node, kids);
    return node;
  }
  function svg(tag, attrs, kids) {
    var node = document.createElementNS(SVGNS, tag);
    Object.keys(attrs || {}).forEach(function (k) {
      if (k === "on") { Object.keys(attrs.on).forEach(function (e) { node.addEventListener(e, attrs.on[e]); }); }
      else { node.setAttribute(k, attrs[k]); }
    });
    add(node, kids);
    return node;
  }
  function add(node, kids) {
    if (kids === null || kids === undefined) return;
    (Array.isArray(kids) ? kids : [kids]).forEach(function (k) {
      if (k === null || k === undefined || k === false) return;
      if (Array.isArray(k)) { add(node, k); return; }
      node.appendChild(typeof k === "object" ? k : document.createTextNode(String(k)));
    });
  }
  function hms(t) {
    t = Math.max(0, Math.floor(t || 0));
    var h = Math.floor(t / 3600), m = Math.floor(t % 3600 / 60), s = t % 60;
    return h + ":" + (m < 10 ? "0" : "") + m + ":" + (s < 10 ? "0" : "") + s;
  }
  function span(a, b) { return el("span", {"class": "time"}, "[" + hms(a) + "-" + hms(b) + "]"); }
  function idTag(id) { return el("span", {"class": "id", title: "node id (what agents cite)"}, id); }
  function clip(text, n) { text = String(text || ""); return text.length > n ? text.slice(0, n - 1) + "\u2026" : text; }
  function chips(items) { return el("div", {"class": "chips"}, (items || []).map(function (x) { return el("span", {}, x); })); }
  function seen(map, id) { return !!map && Object.prototype.hasOwnProperty.call(map, id); }
  function short(id) { return String(id).split("/").pop(); }
  function macroOf(id) { var p = String(id).split("/"); return p.length >= 2 ? p[0] + "/" + p[1] : id; }
  function tokens(q) { return String(q).toLowerCase().split(/[^\p{L}\p{N}_.\/-]+/u).filter(Boolean); }

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

  function nodeTable(title, items, marks, withTime) {
    if (!items.length) return null;
    return [el("h3", {}, title + " (" + items.length + ")"), el("table", {"class": "nodes"}, items.map(function (n) {
      var cls = (marks.hit === n.id ? "hit" : "") + (seen(marks.visited, n.id) ? " visited" : "");
      return el("tr", {"class": cls, id: "node-" + n.id}, [
        el("td", {}, idTag(n.id)), withTime ? el("td", {}, span(n.t0, n.t1)) : null,
        el("td", {}, [n.text, n.detail ? el("div", {"class": "muted"}, n.detail) : null])]);
    }))];
  }

  /* --- video page -------------------------------------------------------------------------- */
  function videoPage() {
    var view = D.view, SUB = D.subgraphs || {}, parts = D.parts || {files: [], of: {}};
    var loaded = {}, waiting = {}, visited = D.visited || {};
    var macros = {}, supers = {};
    view.macros.forEach(function (m) { macros[m.id] = m; });
    view.supers.forEach(function (s) { supers[s.id] = s; });
    window.memtoolsPart = function (i, data) {
      Object.keys(data).forEach(function (k) { SUB[k] = data[k]; });
      loaded[i] = true;
      (waiting[i] || []).forEach(function (cb) { cb(); });
      waiting[i] = [];
    };
    function loadPart(i, cb) {
      if (loaded[i]) { cb(); return; }
      if (waiting[i]) { waiting[i].push(cb); return; }
      waiting[i] = [cb];
      document.head.appendChild(el("script", {src: parts.files[i]}));
    }
    function ensure(id, cb) {
      if (SUB[id] || parts.of[id] === undefined) { cb(); return; }
      loadPart(parts.of[id], cb);
    }
    function loadAll(cb) {
      var left = parts.files.length;
      if (!left) { cb(); return; }
      parts.files.forEach(function (_, i) { loadPart(i, function () { if (--left === 0) cb(); }); });
    }
    crumbs.textContent = "";
    add(crumbs, [el("a", {href: D.index_href}, "Library"), " \u203a ", clip(view.video.title || view.video.id, 90)]);
    var v = view.video;
    var detail = el("div", {id: "detail"}, el("p", {"class": "muted"},
      "Click a macro event (on the timeline or in the list) to open its subgraph."));
    var results = el("div", {id: "results", "class": "card"});
    var tlBox = el("div", {"class": "card"});
    var tree = el("div", {"class": "tree card"});
    var selected = null;
    function drawTl() {
      tlBox.textContent = "";
      tlBox.appendChild(drawTimeline(view, {selected: selected, visited: visited, lanes: view.entities,
        onMacro: function (id) { location.hash = id; }}));
    }
    add(app, [
      el("h1", {}, v.title || "(untitled)"),
      el("div", {}, [idTag(v.id), " ", span(0, v.duration), v.tone ? el("span", {"class": "muted"}, "  tone: " + v.tone) : null]),
      v.description ? el("p", {}, v.description) : null,
      v.themes.length ? el("div", {}, ["Themes: ", chips(v.themes)]) : null,
      v.key_entities.length ? el("div", {}, ["Key entities: ", chips(v.key_entities)]) : null,
      view.strip.length ? el("div", {"class": "strip card"}, view.strip.map(function (f) {
        return el("img", {src: D.frames_base + f[1], alt: "keyframe at " + hms(f[0]), title: hms(f[0]), loading: "lazy",
          on: {click: function () { var m = view.macros.filter(function (x) { return x.t0 <= f[0] && f[0] <= x.t1; })[0];
            if (m) location.hash = m.id; }}});
      })) : null,
      tlBox,
      D.timeline_png ? el("details", {}, [el("summary", {}, "Timeline picture (PNG)"),
        el("img", {src: D.timeline_png, alt: "timeline", style: "max-width:100%"})]) : null,
      results,
      el("div", {"class": "cols"}, [tree, detail])]);
    drawTl();
    view.supers.forEach(function (s) {
      var box = el("details", {open: view.macros.length <= 60 ? "" : null, id: "super-" + s.id}, [
        el("summary", {}, [idTag(s.id), " ", span(s.t0, s.t1), " ", el("b", {}, s.label)]),
        s.description ? el("div", {"class": "muted"}, s.description) : null,
        s.relations.length ? el("div", {}, s.relations.map(function (r) {
          return el("div", {"class": "muted"}, ["\u2192 " + r[2] + " ", idTag(r[1]), r[3] ? " " + r[3] : ""]); })) : null,
        s.macros.map(function (id) {
          var m = macros[id];
          if (!m) return null;
          return el("button", {"class": "macro-link" + (seen(visited, id) ? " visited" : ""), "data-id": id,
            on: {click: function () { location.hash = id; }}}, [idTag(short(id)), " ", span(m.t0, m.t1), " ", m.label]);
        })]);
      tree.appendChild(box);
    });

    function showMacro(id, hit) {
      var m = macros[id];
      if (!m) return;
      selected = id;
      drawTl();
      var parent = document.getElementById("super-" + m.super);
      if (parent) parent.open = true;
      Array.prototype.forEach.call(tree.querySelectorAll(".macro-link"), function (b) {
        b.classList.toggle("sel", b.getAttribute("data-id") === id);
      });
      detail.textContent = "";
      add(detail, el("p", {"class": "muted"}, "Loading " + id + "\u2026"));
      ensure(id, function () {
        var sub = SUB[id];
        var marks = {hit: hit, visited: visited};
        detail.textContent = "";
        if (!sub) { add(detail, el("p", {}, "No details stored for " + id + ".")); return; }
        add(detail, el("div", {"class": "card", id: "macro-detail", "data-id": id}, [
          el("h2", {}, m.label), el("div", {}, [idTag(id), " ", span(m.t0, m.t1), " in ", idTag(m.super), " ",
            el("span", {"class": "muted"}, (supers[m.super] || {}).label || "")]),
          sub.summary ? el("p", {}, sub.summary) : null,
          m.key_entities.length ? el("div", {}, ["Key entities: ", chips(m.key_entities)]) : null,
          sub.relations.length ? el("div", {}, sub.relations.map(function (r) {
            return el("div", {}, ["\u2192 " + r[2] + " ", el("a", {href: "#" + r[1]}, idTag(r[1])),
              r[3] ? el("span", {"class": "muted"}, " " + r[3]) : ""]); })) : null,
          sub.keyframes.length ? el("div", {"class": "frames"}, sub.keyframes.map(function (f) {
            return el("figure", {}, [el("img", {src: D.frames_base + f[1], alt: "keyframe at " + hms(f[0]), loading: "lazy"}),
              hms(f[0])]); })) : null,
          el("h3", {}, "Graph"), drawGraph(sub, marks),
          nodeTable("Entities", sub.entities, marks, false),
          nodeTable("Micro-events", sub.events, marks, true),
          nodeTable("On-screen text", sub.ocr, marks, true),
          sub.edges.length ? [el("h3", {}, "Edges (" + sub.edges.length + ")"), el("table", {"class": "nodes"},
            sub.edges.map(function (e) { return el("tr", {}, [el("td", {}, [idTag(short(e[0])), " -" + e[2] + "-> ",
              idTag(short(e[1]))]), el("td", {"class": "muted"}, e[3]), el("td", {}, e[4])]); }))] : null]));
        var target = hit && document.getElementById("node-" + hit);
        (target || detail).scrollIntoView({block: "nearest"});
      });
    }
    function route() {
      var h = decodeURIComponent(location.hash.slice(1));
      if (!h) return;
      if (supers[h]) { var box = document.getElementById("super-" + h); if (box) { box.open = true; box.scrollIntoView(); } return; }
      showMacro(macroOf(h), h === macroOf(h) ? null : h);
    }
    window.addEventListener("hashchange", route);
    route();

    /* search over every node text of the video (loads the detail parts first) */
    function entries() {
      var out = [{id: v.id, kind: "video", t0: 0, t1: v.duration, text: [v.title, v.description].concat(v.themes, v.key_entities).join(" ")}];
      view.supers.forEach(function (s) { out.push({id: s.id, kind: "super", t0: s.t0, t1: s.t1, text: s.label + " " + s.description + " " + s.key_entities.join(" ")}); });
      view.macros.forEach(function (m) {
        var sub = SUB[m.id] || {entities: [], events: [], ocr: [], summary: ""};
        out.push({id: m.id, kind: "macro", t0: m.t0, t1: m.t1, text: m.label + " " + sub.summary + " " + m.key_entities.join(" ")});
        [["entity", sub.entities], ["event", sub.events], ["ocr", sub.ocr]].forEach(function (g) {
          g[1].forEach(function (n) { out.push({id: n.id, kind: g[0], t0: n.t0 === undefined ? m.t0 : n.t0,
            t1: n.t1 === undefined ? m.t1 : n.t1, text: n.text + " " + (n.detail || "")}); });
        });
      });
      return out;
    }
    searchBox.placeholder = "search this video (words, ids)";
    runSearch(results, entries, loadAll, function (hit) { location.hash = hit.kind === "super" ? hit.id : hit.id; });
  }

  function runSearch(results, entries, prepare, open) {
    var timer = null;
    searchBox.addEventListener("input", function () {
      clearTimeout(timer);
      timer = setTimeout(function () {
        var q = searchBox.value.trim();
        results.textContent = "";
        if (q.length < 2) { results.classList.remove("on"); return; }
        prepare(function () {
          var words = tokens(q);
          var hits = entries().filter(function (e) {
            var hay = (e.id + " " + e.text).toLowerCase();
            return words.every(function (w) { return hay.indexOf(w) >= 0; });
          });
          results.classList.add("on");
          add(results, el("div", {"class": "muted"}, hits.length + " match(es) for \u201c" + q + "\u201d"
            + (hits.length > 200 ? " (first 200 shown)" : "")));
          add(results, el("ol", {}, hits.slice(0, 200).map(function (h) {
            return el("li", {"class": "hit", "data-id": h.id, on: {click: function () { open(h); }}},
              [el("span", {"class": "muted"}, "[" + h.kind + "] "), idTag(h.id), " ", span(h.t0, h.t1), " ",
               highlight(clip(h.text, 220), words)]);
          })));
        });
      }, 120);
    });
  }
  function highlight(text, words) {
    var lower = text.toLowerCase(), out = [], i = 0;
    while (i < text.length) {
      var best = -1, len = 0;
      words.forEach(function (w) { var j = lower.indexOf(w, i); if (j >= 0 && (best < 0 || j < best)) { best = j; len = w.length; } });
      if (best < 0) { out.push(text.slice(i)); break; }
      out.push(text.slice(i, best), el("mark", {}, text.slice(best, best + len)));
      i = best + len;
    }
    return el("span", {}, out);
  }

  /* --- library index ------------------------------------------------------------------------ */
  function libraryPage() {
    crumbs.textContent = "Library";
    var pager = el("div", {"class": "pager"}, D.pages.map(function (href, i) {
      return i + 1 === D.page ? el("span", {}, "[" + (i + 1) + "]") : el("a", {href: href}, String(i + 1));
    }));
    var rows = el("tbody", {}, D.rows.map(row));
    function row(r) {
      return el("tr", {}, [el("td", {}, el("a", {href: r.href}, idTag(r.id))), el("td", {}, r.title || "(untitled)"),
        el("td", {}, span(0, r.duration)), el("td", {"class": "muted"}, r.status),
        el("td", {"class": "muted"}, ["super", "macro", "entity", "event", "ocr"].map(function (k) {
          return (r.counts[k] || 0) + " " + k; }).join(", "))]);
    }
    add(app, [el("h1", {}, D.title), el("p", {"class": "muted"}, D.total + " video(s); page " + D.page + " of " + D.pages.length),
      pager, el("table", {"class": "lib card"}, [el("thead", {}, el("tr", {}, ["video", "title", "length", "status", "nodes"]
        .map(function (h) { return el("th", {}, h); }))), rows])]);
    searchBox.placeholder = "filter all videos by id or title";
    var results = el("div", {id: "results", "class": "card"});
    app.insertBefore(results, pager);
    runSearch(results, function () {
      return D.all.map(function (a) { return {id: a[0], kind: "video", t0: 0, t1: a[2], text: a[1], href: a[3]}; });
    }, function (cb) { cb(); }, function (hit) { location.href = hit.href; });
  }

  /* --- an answer's trace ----------------------------------------------------------------------- */
  function tracePage() {
    var run = D.run;
    crumbs.textContent = "Answer trace";
    var opts = Object.keys(run.options || {});
    add(app, [el("h1", {}, run.question),
      opts.length ? el("ul", {"class": "options"}, opts.map(function (k) { return el("li", {}, "(" + k + ") " + run.options[k]); })) : null,
      el("div", {"class": "card answer"}, [el("b", {}, "Answer: " + (run.answer === null ? "none" : run.answer)),
        run.options && run.options[run.answer] ? " (" + run.options[run.answer] + ")" : "",
        el("span", {"class": "muted"}, "  " + run.status + ", " + run.rounds + " round(s)"),
        run.reasoning ? el("p", {}, run.reasoning) : null,
        run.cited.length ? el("div", {}, ["Cited: "].concat(run.cited.map(function (id) { return [idTag(id), " "]; }))) : null])]);
    D.videos.forEach(function (view) {
      add(app, el("div", {"class": "card"}, [el("b", {}, [idTag(view.video.id), " ", view.video.title]),
        el("div", {"class": "muted"}, "events a tool result named are outlined in red with the round (r0 = the first call); those the agent opened are hatched dark"),
        drawTimeline(view, {visited: D.visited, opened: D.opened, lanes: []})]));
    });
    add(app, el("h2", {}, "Rounds"));
    run.steps.forEach(function (s) {
      add(app, el("div", {"class": "card round" + (s.ok === false ? " err" : ""), id: "round-" + s.round}, [
        el("b", {}, "Round " + s.round), s.read ? el("span", {"class": "muted"}, "  read: " + s.read) : null,
        s.reasoning ? el("p", {}, s.reasoning) : null,
        s.clue ? el("div", {}, [el("b", {}, "Clue kept: "), s.clue]) : null,
        s.call ? el("div", {}, [el("b", {}, "Call: "), el("code", {}, s.call)]) : null,
        s.failure ? el("div", {"class": "muted"}, "failed: " + s.failure) : null,
        s.summary ? el("div", {}, [el("b", {}, "Result: "), s.summary]) : null,
        s.ids.length ? el("div", {}, s.ids.map(function (id) { return [idTag(id), " "]; })) : null,
        s.observation ? el("details", {}, [el("summary", {}, "full observation"), el("pre", {"class": "obs"}, s.observation)]) : null,
        s.answer !== undefined && s.answer !== null ? el("div", {}, [el("b", {}, "Answer: "), s.answer]) : null]));
    });
    if (run.clues.length) {
      add(app, [el("h2", {}, "Useful info (the notes carried between rounds)"), el("ol", {}, run.clues.map(function (c) {
        return el("li", {}, [el("span", {"class": "muted"}, "round " + c.round + ", " + c.source + ": "), c.text]); }))]);
    }
    searchBox.style.display = "none";
  }

  if (D.kind === "video") videoPage();
  else if (D.kind === "library") libraryPage();
  else if (D.kind === "trace") tracePage();
})();
