// The embed script: <script src="{origin}/static/widget/loader.js?guid=<button_guid>" async></script>
//
// Tiny on purpose (at most 2 KB gzipped, tested): it defines the one global `ChatWidget`, waits for
// the host page's `load` event (and for consent when `data-consent="required"`), then mounts an
// open shadow root and adds widget.js with the nonce of its own script tag, so a strict
// Content-Security-Policy that allows our origin (or the nonce) lets it run. Calls made before the
// widget has loaded are queued and replayed in order.
(function (win, doc) {
  var NS = "ChatWidget";
  var pre = win[NS];
  if (pre && pre.version) return; // the snippet pasted twice
  // currentScript is null only when a tag manager runs the code without a script element of its own.
  var script = doc.currentScript || doc.querySelector('script[src*="/static/widget/loader.js"]');
  if (!script) return;
  var src = new URL(script.src, location.href);
  var data = function (name) {
    return script.getAttribute("data-" + name);
  };
  var queue = (pre && pre.q) || [];
  var handlers = {};
  var consent = data("consent") !== "required";
  var mounted = false;

  function call(name) {
    return function () {
      var args = [].slice.call(arguments);
      var widget = api._widget;
      if (widget && widget[name]) widget[name].apply(widget, args);
      else queue.push([name, args]);
      return api;
    };
  }

  var api = {
    version: 1,
    origin: src.origin,
    guid: src.searchParams.get("guid") || data("guid") || "",
    nonce: script.nonce || script.getAttribute("nonce") || "",
    language: src.searchParams.get("lang") || data("language") || "",
    // The console's widget builder: the widget takes its parent's unsaved values and sends nothing.
    preview: data("preview") === "1",
    q: queue,
    handlers: handlers,
    open: call("open"),
    close: call("close"),
    identify: call("identify"),
    setLanguage: call("setLanguage"),
    setUser: call("setUser"),
    reset: call("reset"),
    setAttributes: call("setAttributes"),
    show: call("show"),
    hide: call("hide"),
    send: call("send"),
    trigger: call("trigger"),
    on: function (event, fn) {
      (handlers[event] = handlers[event] || []).push(fn);
      return api;
    },
    off: function (event, fn) {
      handlers[event] = (handlers[event] || []).filter(function (h) {
        return h !== fn;
      });
      return api;
    },
    grantConsent: function () {
      consent = true;
      start();
      return api;
    },
  };
  win[NS] = api;

  function mount() {
    if (mounted || !consent) return;
    mounted = true;
    var host = doc.createElement("chat-widget");
    host.setAttribute("data-guid", api.guid);
    api.root = host.attachShadow({ mode: "open" });
    api.host = host;
    doc.body.appendChild(host);
    var tag = doc.createElement("script");
    tag.src = api.origin + "/static/widget/widget.js?v=__WIDGET_VERSION__";
    tag.async = true;
    if (api.nonce) tag.nonce = api.nonce;
    doc.head.appendChild(tag);
  }

  // After the load event, never inside it: the host page's load handlers and loadEventEnd stay ours-free.
  function later() {
    setTimeout(mount, 0);
  }

  function start() {
    if (doc.readyState === "complete") later();
    else win.addEventListener("load", later);
  }

  start();
})(window, document);
