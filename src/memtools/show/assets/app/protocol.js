/* memtools timeline, an MCP App (io.modelcontextprotocol/ui, SEP-1865), part 1 of 3: talking to the host.
   JSON-RPC 2.0 over postMessage with the window that holds this frame: ui/initialize, then
   ui/notifications/initialized; the host sends the tool's input and result as notifications; tools/call
   goes back through the host to the memtools server. The three parts share one function scope. */
"use strict";
var PROTOCOL_VERSION = "2026-01-26";
var TOOL_NAMES = ["get_summary", "search_by_time", "search_nodes", "get_entity_timeline", "get_macro_events",
                  "inspect_frames"];
var rpc = {next: 1, pending: {}, handlers: {}, prefix: "", context: {}};

function post(message) { window.parent.postMessage(message, "*"); }
function request(method, params) {
  var id = rpc.next++;
  return new Promise(function (resolve, reject) {
    rpc.pending[id] = {resolve: resolve, reject: reject};
    post({jsonrpc: "2.0", id: id, method: method, params: params || {}});
  });
}
function notify(method, params) { post({jsonrpc: "2.0", method: method, params: params || {}}); }
function on(method, handler) { rpc.handlers[method] = handler; }

window.addEventListener("message", function (event) {
  var m = event.data;
  if (event.source !== window.parent || !m || m.jsonrpc !== "2.0") return;
  if (m.method === undefined) {  // the answer to one of our requests
    var waiting = rpc.pending[m.id];
    if (!waiting) return;
    delete rpc.pending[m.id];
    if (m.error) waiting.reject(new Error(m.error.message || "the host refused the request"));
    else waiting.resolve(m.result);
    return;
  }
  var handler = rpc.handlers[m.method];
  if (m.id === undefined) { if (handler) handler(m.params || {}); return; }  // a notification
  if (!handler) { post({jsonrpc: "2.0", id: m.id, error: {code: -32601, message: "not supported: " + m.method}}); return; }
  post({jsonrpc: "2.0", id: m.id, result: handler(m.params || {}) || {}});
});

/* A memtools tool through the host, with the server's tool prefix (memtools serve --tool-prefix). */
function callTool(name, args) {
  return request("tools/call", {name: rpc.prefix + name, arguments: args}).then(function (result) {
    if (!result || result.isError) throw new Error(textOf(result) || name + " failed");
    return result;
  });
}
function textOf(result) {
  return ((result && result.content) || []).filter(function (b) { return b.type === "text"; })
    .map(function (b) { return b.text; }).join("\n");
}

/* The host's context: theme, style variables, and the tool that opened the app (its name gives the prefix). */
function applyContext(ctx) {
  if (!ctx) return;
  Object.keys(ctx).forEach(function (k) { rpc.context[k] = ctx[k]; });
  var root = document.documentElement;
  if (ctx.theme === "light" || ctx.theme === "dark") root.setAttribute("data-theme", ctx.theme);
  var vars = (ctx.styles && ctx.styles.variables) || {};
  Object.keys(vars).forEach(function (k) {
    if (/^--[A-Za-z0-9-]+$/.test(k) && typeof vars[k] === "string") root.style.setProperty(k, vars[k]);
  });
  var tool = ctx.toolInfo && ctx.toolInfo.tool && ctx.toolInfo.tool.name;
  if (tool) {
    var base = TOOL_NAMES.filter(function (n) { return tool.slice(-n.length) === n; })[0];
    if (base) rpc.prefix = tool.slice(0, tool.length - base.length);
  }
}

/* Tell the host how much room the app needs (it sizes the frame to that). */
var lastSize = "";
function reportSize() {
  var box = document.documentElement.getBoundingClientRect();
  var size = {width: Math.ceil(box.width), height: Math.ceil(document.body.scrollHeight)};
  if (size.width + "x" + size.height === lastSize) return;
  lastSize = size.width + "x" + size.height;
  notify("ui/notifications/size-changed", size);
}

/* The handshake; ``hooks.redraw()`` after the host's context changes, ``hooks.fail(text)`` if there is no host. */
function connect(hooks) {
  on("ping", function () { return {}; });
  on("ui/resource-teardown", function () { return {}; });
  on("ui/notifications/host-context-changed", function (ctx) { applyContext(ctx); hooks.redraw(); });
  if (window.ResizeObserver) new ResizeObserver(function () { requestAnimationFrame(reportSize); }).observe(document.body);
  request("ui/initialize", {protocolVersion: PROTOCOL_VERSION,
    appInfo: {name: "memtools-timeline", title: "memtools timeline", version: "1"},
    appCapabilities: {availableDisplayModes: ["inline"]}}).then(function (result) {
    applyContext((result && result.hostContext) || {});
    notify("ui/notifications/initialized", {});
    reportSize();
  }, function (err) { hooks.fail("The host did not answer ui/initialize: " + err.message); });
}
