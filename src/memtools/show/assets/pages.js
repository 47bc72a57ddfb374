/* memtools show, part 3 of 3: the video page (with search), the library index and an answer's trace. */
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
        nodeTable("Entities", sub.entities, marks, m),
        nodeTable("Micro-events", sub.events, marks, m),
        nodeTable("On-screen text", sub.ocr, marks, m),
        nodeTable("Speech", sub.speech || [], marks, m),
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
      [["entity", sub.entities], ["event", sub.events], ["ocr", sub.ocr], ["speech", sub.speech || []]].forEach(function (g) {
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
