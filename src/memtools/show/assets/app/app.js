/* memtools timeline, part 3 of 3: what a tool result holds, what else to fetch through the host, the answer to
   a click. get_summary gives a video's super events; search_by_time its macro events; search_nodes hits and
   get_entity_timeline appearances become marks. Whatever a result lacks is asked for: get_summary (duration,
   super events), search_by_time (macro events) and inspect_frames (a few keyframes, as the base64 JPEGs the
   tool returns: the app reaches nothing but the host). */
var MAX_VIDEOS = 3, FRAMES = 8;
var state = {views: [], byId: {}, selected: null, tool: ""};
var statusBox = document.getElementById("status"), videosBox = document.getElementById("videos");
var answerBox = document.getElementById("answer");

function setStatus(text, isError) {
  statusBox.textContent = text || "";
  statusBox.className = "status" + (isError ? " err" : "");
  statusBox.hidden = !text;
}
function view(id) {
  if (!state.byId[id]) {
    if (state.views.length >= MAX_VIDEOS) return null;
    state.byId[id] = {id: id, title: "", duration: null, supers: [], macros: [], frames: [], marks: [], kind: ""};
    state.views.push(state.byId[id]);
  }
  return state.byId[id];
}
function macroOf(id) { var p = String(id || "").split("/"); return p.length >= 2 ? p[0] + "/" + p[1] : ""; }
function fillSummary(v, s) {
  v.title = s.title || v.title;
  v.duration = s.duration || v.duration || Math.max.apply(null, (s.supers || []).map(function (x) { return x.t_end; }).concat([1]));
  v.supers = (s.supers || []).map(function (x) { return {id: x.id, label: x.label, t0: x.t_start, t1: x.t_end}; });
}
function fillMacros(v, data) {
  var seen = {};
  v.macros = [];
  (data.matches || []).forEach(function (m) {
    var x = m.macro;
    if (m.video_id !== v.id || !x || seen[x.id]) return;
    seen[x.id] = true;
    v.macros.push({id: x.id, super: x.super_id, label: x.label, t0: x.t_start, t1: x.t_end});
  });
}

/* The result that opened the app: which videos, and what to mark on them. */
function readResult(data) {
  if (data.supers && data.video_id && "duration" in data) { fillSummary(view(data.video_id), data); return "summary"; }
  if (data.matches) {
    data.matches.forEach(function (m) { var v = view(m.video_id); if (v) fillMacros(v, data); });
    if (data.start_sec !== null && data.start_sec !== undefined) {
      state.views.forEach(function (v) {
        v.marks.push({id: "window", kind: "window", macro: "", t0: data.start_sec, t1: data.end_sec || data.start_sec,
          label: "asked window " + hms(data.start_sec) + "-" + hms(data.end_sec)});
      });
    }
    return "window";
  }
  if (data.hits) {
    data.hits.forEach(function (h) {
      var v = h.video_id && h.t_start !== null && h.t_start !== undefined ? view(h.video_id) : null;
      if (v) v.marks.push({id: h.id, kind: "hit", macro: h.macro_id || macroOf(h.id), t0: h.t_start, t1: h.t_end,
        label: h.id + ": " + clip(h.text, 120)});
    });
    return "hits";
  }
  if (data.timelines) {
    data.timelines.forEach(function (line) {
      var v = line.entity && view(line.entity.video_id);
      if (v) (line.appearances || []).forEach(function (a) {
        v.marks.push({id: a.mention_id, kind: "appearance", macro: a.macro_id, t0: a.t_start, t1: a.t_end,
          label: (line.entity.name || line.entity.id) + " in " + a.macro_label});
      });
    });
    return "appearances";
  }
  return "";
}

function load(v) {
  var summary = v.duration !== null ? Promise.resolve() : callTool("get_summary", {video_id: v.id}).then(function (r) {
    fillSummary(v, r.structuredContent || {}); redraw(); });
  return summary.then(function () {
    var macros = v.macros.length ? null : callTool("search_by_time", {video_id: v.id, start_sec: 0, end_sec: v.duration})
      .then(function (r) { fillMacros(v, r.structuredContent || {}); redraw(); });
    var frames = callTool("inspect_frames", {video_id: v.id, start_sec: 0, end_sec: v.duration, max_frames: FRAMES})
      .then(function (r) { v.frames = framesOf(r); redraw(); });
    return Promise.all([macros, frames]);
  });
}
/* inspect_frames: per frame a text block, then (when it fit) the JPEG; structured content lists them in order. */
function framesOf(result) {
  var items = ((result.structuredContent || {}).frames || []).filter(function (f) { return f.image; });
  var images = (result.content || []).filter(function (b) { return b.type === "image" && /^image\/(jpeg|png)$/.test(b.mimeType); });
  return items.slice(0, images.length).map(function (f, i) {
    return {t: f.t, macro: f.macro_id, label: f.macro_label, src: "data:" + images[i].mimeType + ";base64," + images[i].data};
  });
}

function redraw() {
  var width = videosBox.clientWidth || document.documentElement.clientWidth || 640;
  videosBox.textContent = "";
  state.views.forEach(function (v) {
    if (v.duration === null) return;
    var marks = v.marks.filter(function (k) { return k.kind !== "window"; }).length;
    videosBox.appendChild(el("section", {"class": "video", "data-video": v.id}, [
      el("h2", {}, [clip(v.title || v.id, 90), el("span", {"class": "meta"}, "  " + v.id + " \u00b7 " + hms(v.duration))]),
      drawVideo(v, {width: width, selected: state.selected, onMoment: openMoment}),
      el("div", {"class": "legend"}, [marks ? el("b", {}, "\u25a0 ") : null,
        marks ? marks + " " + (v.marks[0].kind === "hit" ? "hit" : "appearance") + (marks > 1 ? "s" : "") + " \u00b7 " : "",
        "click a macro event, a mark or a frame to open it"])]));
  });
  if (!state.drawn && videosBox.firstChild) {
    state.drawn = true;
    requestAnimationFrame(function () { performance.mark("memtools-app-drawn"); });
  }
}

/* A click on a moment: its macro event, read through the host with get_macro_events. */
function openMoment(macroId) {
  if (!macroId) return;
  state.selected = macroId;
  redraw();
  answerBox.hidden = false;
  answerBox.textContent = "";
  answerBox.setAttribute("data-id", macroId);
  var call = "get_macro_events(macro_ids=[\"" + macroId + "\"])";
  answerBox.appendChild(el("p", {"class": "call"}, call + " \u2026"));
  callTool("get_macro_events", {macro_ids: [macroId]}).then(function (r) {
    if (state.selected !== macroId) return;
    var m = ((r.structuredContent || {}).macros || [])[0];
    answerBox.textContent = "";
    answerBox.appendChild(el("p", {"class": "call"}, call));
    if (!m) { answerBox.appendChild(el("pre", {"class": "text"}, textOf(r))); return; }
    answerBox.appendChild(el("h3", {}, m.label));
    answerBox.appendChild(el("div", {}, [el("span", {"class": "id"}, m.id), " ",
      el("span", {"class": "time"}, "[" + hms(m.t_start) + "-" + hms(m.t_end) + "]"), " ",
      el("span", {"class": "muted"}, m.super_label || "")]));
    if (m.summary) answerBox.appendChild(el("p", {}, m.summary));
    if ((m.key_entities || []).length) answerBox.appendChild(el("div", {"class": "chips"},
      m.key_entities.map(function (k) { return el("span", {}, k); })));
  }, function (err) {
    answerBox.textContent = "";
    answerBox.appendChild(el("p", {"class": "status err"}, call + " failed: " + err.message));
  });
}

on("ui/notifications/tool-input", function () {});
on("ui/notifications/tool-input-partial", function () {});
on("ui/notifications/tool-cancelled", function (p) { setStatus("The tool call was cancelled" + (p.reason ? ": " + p.reason : "."), true); });
on("ui/notifications/tool-result", function (result) {
  state.views = []; state.byId = {}; state.selected = null; state.drawn = false;
  answerBox.hidden = true;
  var data = result && !result.isError && result.structuredContent;
  state.tool = data ? readResult(data) : "";
  if (!state.views.length) {
    setStatus(result && result.isError ? textOf(result) : "Nothing in this result has a time to draw.", !!(result && result.isError));
    redraw();
    return;
  }
  setStatus("");
  redraw();
  Promise.all(state.views.map(function (v) {
    return load(v).catch(function (err) { setStatus("Could not load all of " + v.id + ": " + err.message, true); });
  })).then(function () { document.documentElement.setAttribute("data-loaded", "1"); });
});
window.addEventListener("resize", function () { if (state.views.length) redraw(); });
connect({redraw: redraw, fail: function (text) { setStatus(text, true); }});
