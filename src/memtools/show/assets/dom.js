/* memtools show, part 1 of 3: the page's data and small DOM helpers. The three files are
   joined inside one function scope (see page.html). */
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
