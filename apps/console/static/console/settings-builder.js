/* The widget builder: the colour pickers beside their text boxes, and the live preview.

   The preview frame is the console's own page with the real widget in preview mode. This script
   reads the form's current (unsaved) values into the shape of the widget's settings and posts them
   to the frame, only to the console's own origin; it takes the frame's "ready" only from that frame
   and that origin. The widget, in turn, takes values only from its parent on the service's origin.
   Inputs carry `data-kind` (the setting's kind); nested settings are named `a__b__c`. */
(function () {
  "use strict";
  var form = document.querySelector("[data-preview-source]");
  var frame = document.querySelector("[data-preview-frame]");
  if (!form) return;
  var origin = window.location.origin;
  var online = document.getElementById("preview-online");
  var language = document.getElementById("preview-language");
  var device = document.getElementById("preview-device");

  // Colour pickers: shown once script runs, kept in step with the #RRGGBB text that is posted.
  form.querySelectorAll("[data-colour-for]").forEach(function (picker) {
    var text = document.getElementById(picker.dataset.colourFor);
    if (!text) return;
    picker.hidden = false;
    picker.addEventListener("input", function () {
      text.value = picker.value.toUpperCase();
      text.dispatchEvent(new Event("input", { bubbles: true }));
    });
    text.addEventListener("input", function () {
      if (/^#[0-9a-f]{6}$/i.test(text.value)) picker.value = text.value.toLowerCase();
    });
  });

  function put(target, path, value) {
    var at = target;
    for (var i = 0; i < path.length - 1; i++) {
      at[path[i]] = at[path[i]] || {};
      at = at[path[i]];
    }
    at[path[path.length - 1]] = value;
  }

  // The form as settings: an empty top-level box is null (the widget's default shows), an empty
  // nested box is left out (the setting above, or the built-in text, shows).
  function values() {
    var out = {};
    var lists = {};
    form.querySelectorAll("[data-kind]").forEach(function (el) {
      var kind = el.dataset.kind;
      var path = el.name ? el.name.split("__") : [];
      var nested = path.length > 1;
      var raw = el.value;
      if (kind === "list") {
        lists[el.name] = lists[el.name] || [];
        if (el.checked) lists[el.name].push(el.value);
        return;
      }
      if (!el.name) return;
      if (kind === "list-item") {
        lists[path[0]] = lists[path[0]] || [];
        if (raw) lists[path[0]].push(raw);
        return;
      }
      // A per-language map stands whole: all boxes empty is an empty map.
      if (kind === "map-text") out[path[0]] = out[path[0]] || {};
      if (kind === "boolean") return put(out, path, el.checked);
      if (kind === "tri") return raw ? put(out, path, raw === "1") : null;
      if (raw === "") return nested || kind === "map-text" ? null : put(out, path, null);
      if (kind === "integer" || kind === "integer_enum" || kind === "integer-or-none" || kind === "integer_enum-or-none") {
        var n = Number(raw);
        return Number.isInteger(n) ? put(out, path, n) : null;
      }
      put(out, path, raw);
    });
    Object.keys(lists).forEach(function (name) {
      out[name] = lists[name];
    });
    return out;
  }

  var ready = false;
  function send() {
    if (!ready || !frame || !frame.contentWindow) return;
    frame.contentWindow.postMessage(
      {
        type: "chat-widget:preview",
        settings: values(),
        online: !online || online.value !== "0",
        language: language ? language.value : "",
        device: device ? device.value : "desktop",
      },
      origin,
    );
  }

  window.addEventListener("message", function (e) {
    if (!frame || e.source !== frame.contentWindow || e.origin !== origin) return;
    if (e.data && e.data.type === "chat-widget:ready") {
      ready = true;
      send();
    }
  });
  var pending = 0;
  function soon() {
    clearTimeout(pending);
    pending = setTimeout(send, 120);
  }
  form.addEventListener("input", soon);
  form.addEventListener("change", soon);
  [online, language, device].forEach(function (el) {
    if (el) el.addEventListener("change", send);
  });
  var controls = document.querySelector(".builder-preview-controls");
  if (controls) controls.hidden = false;
})();
