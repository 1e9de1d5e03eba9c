/* Mentions in the console: the `@` picker of the private-note box, and what a mention of this
   operator does when its frame arrives on the console's socket (console.js passes every frame on as
   a `console:frame` event): a toast with a button that opens it, a browser notification while the
   page is hidden (when the operator turned Alerts on and the browser allows them), and the count
   on the header's "Mentions" item. The words come from the page's JSON block, like console.js's. */
(function () {
  "use strict";

  var body = document.body;
  if (!body.dataset.ws) return; // the sign-in page

  function $(id) { return document.getElementById(id); }
  var strings = {};
  try { strings = JSON.parse(($("console-strings") || {}).textContent || "{}") || {}; } catch (e) { strings = {}; }
  function t(key, fallback) { return strings[key] || fallback; }
  var csrf = JSON.parse(body.getAttribute("hx-headers") || "{}")["X-CSRFToken"] || "";

  // --- a mention of this operator arrives ------------------------------------------------------

  function showCount(n) {
    var badge = $("mentions-count");
    if (!badge) return;
    badge.hidden = !n;
    var number = badge.querySelector(".mentions-n");
    if (number) number.textContent = String(n);
  }

  function openUrl(frame) {
    var toasts = $("toasts");
    return (toasts && toasts.dataset.mentionsUrl || "/console/mentions/") + frame.mention_id + "/open/";
  }

  // A plain form post, as the Mentions page's: the mention is read, then its chat opens at the note.
  function openForm(frame) {
    var form = document.createElement("form");
    form.method = "post";
    form.action = openUrl(frame);
    var token = document.createElement("input");
    token.type = "hidden";
    token.name = "csrfmiddlewaretoken";
    token.value = csrf;
    form.appendChild(token);
    return form;
  }

  function title(frame) {
    var name = frame.by_name || t("mention_someone", "An operator");
    return t("mention_title", "%(name)s mentioned you").replace("%(name)s", name);
  }

  // Toasts stay until dismissed or opened (no timer takes them away); the newest three are kept.
  function toast(frame) {
    var toasts = $("toasts");
    if (!toasts) return;
    var item = document.createElement("div");
    item.className = "toast";
    var heading = document.createElement("p");
    heading.className = "toast-title";
    var bdi = document.createElement("bdi");
    bdi.textContent = title(frame);
    heading.appendChild(bdi);
    var text = document.createElement("p");
    text.className = "toast-text";
    text.dir = "auto";
    text.textContent = frame.text || "";
    var form = openForm(frame);
    form.className = "toast-actions";
    var open = document.createElement("button");
    open.type = "submit";
    open.className = "btn btn-primary";
    open.textContent = t("mention_open", "Open");
    var dismiss = document.createElement("button");
    dismiss.type = "button";
    dismiss.className = "btn btn-quiet";
    dismiss.textContent = toasts.dataset.dismiss || "Dismiss";
    dismiss.addEventListener("click", function () { item.remove(); });
    form.appendChild(open);
    form.appendChild(dismiss);
    item.appendChild(heading);
    item.appendChild(text);
    item.appendChild(form);
    toasts.appendChild(item);
    while (toasts.children.length > 3) toasts.removeChild(toasts.firstElementChild);
  }

  function alertsOn() {
    try { return localStorage.getItem("console.alerts") === "on"; } catch (e) { return false; }
  }

  function browserNotice(frame) {
    if (!document.hidden || !alertsOn() || !("Notification" in window) || Notification.permission !== "granted") return;
    try {
      var text = frame.text || "";
      var notice = new Notification(title(frame), { body: text, tag: "mention-" + frame.mention_id });
      notice.onclick = function () {
        window.focus();
        var form = openForm(frame);
        document.body.appendChild(form);
        form.submit();
        notice.close();
      };
    } catch (e) { /* notifications only from a service worker: the toast stays */ }
  }

  body.addEventListener("console:frame", function (event) {
    var frame = event.detail || {};
    if (frame.event !== "mention") return;
    showCount(frame.unread);
    toast(frame);
    browserNotice(frame);
  });

  // --- the `@` picker of the private-note box -----------------------------------------------------
  // The note field drives a listbox of the widget's human operators filtered by what follows the
  // `@` before the caret; its active option is announced through aria-activedescendant. Arrows move,
  // Enter or Tab insert `@Name `, Escape closes.

  var picker = { open: false, items: [], active: -1, start: -1, operators: null, loading: false };

  function list() { return $("mention-list"); }
  function field() { return $("note_body"); }

  function markField() {
    var f = field();
    if (!f || !list()) return;
    f.setAttribute("aria-autocomplete", "list");
    f.setAttribute("aria-controls", "mention-list");
  }
  markField();

  function close() {
    var l = list();
    var f = field();
    picker.open = false;
    picker.items = [];
    picker.active = -1;
    picker.start = -1;
    if (l) { l.hidden = true; l.textContent = ""; }
    if (f) f.removeAttribute("aria-activedescendant");
  }

  function showActive() {
    var l = list();
    var f = field();
    if (!l || !f) return;
    Array.prototype.forEach.call(l.children, function (li, i) {
      li.setAttribute("aria-selected", i === picker.active ? "true" : "false");
    });
    var active = l.children[picker.active];
    if (active) {
      f.setAttribute("aria-activedescendant", active.id);
      active.scrollIntoView({ block: "nearest" });
    } else {
      f.removeAttribute("aria-activedescendant");
    }
  }

  function draw(items) {
    var l = list();
    if (!l) return;
    l.textContent = "";
    picker.items = items;
    picker.active = items.length ? 0 : -1;
    items.forEach(function (item, i) {
      var li = document.createElement("li");
      li.id = "mention-option-" + i;
      li.setAttribute("role", "option");
      var name = document.createElement("bdi"); // the name keeps its direction, the row the page's
      name.textContent = item.name;
      li.appendChild(name);
      l.appendChild(li);
    });
    picker.open = items.length > 0;
    l.hidden = !picker.open;
    showActive();
  }

  // The `@` the caret is in: its index and the text typed after it, or null.
  function token(f) {
    var before = f.value.slice(0, f.selectionStart);
    var at = before.lastIndexOf("@");
    if (at < 0 || (at > 0 && /[\w]/.test(before.charAt(at - 1)))) return null;
    var query = before.slice(at + 1);
    if (query.length > 60 || /[\n@]/.test(query)) return null;
    return { start: at, query: query };
  }

  function matches(query) {
    var q = query.toLocaleLowerCase();
    return (picker.operators || []).filter(function (item) {
      var name = item.name.toLocaleLowerCase();
      if (name.indexOf(q) === 0) return true;
      return q && !/\s/.test(q) && name.split(/\s+/).some(function (word) { return word.indexOf(q) === 0; });
    }).slice(0, 8);
  }

  function update() {
    var f = field();
    if (!f) return;
    var found = token(f);
    if (!found) { if (picker.open || picker.start >= 0) close(); return; }
    picker.start = found.start;
    if (picker.operators === null) {
      if (picker.loading || !list()) return;
      picker.loading = true;
      fetch(list().dataset.url, { credentials: "same-origin" })
        .then(function (r) { return r.ok ? r.json() : { items: [] }; })
        .then(function (data) { picker.operators = data.items || []; })
        .catch(function () { picker.operators = []; })
        .then(function () { picker.loading = false; update(); });
      return;
    }
    var items = matches(found.query);
    // A name already typed out whole, followed by a space, needs no picker.
    if (/\s$/.test(found.query) && !items.length) { close(); return; }
    draw(items);
  }

  function choose(index) {
    var item = picker.items[index];
    var f = field();
    if (!item || !f || picker.start < 0) return;
    var before = f.value.slice(0, picker.start);
    var after = f.value.slice(f.selectionStart);
    var inserted = "@" + item.name + " ";
    f.value = before + inserted + after;
    var caret = before.length + inserted.length;
    close();
    f.focus();
    f.setSelectionRange(caret, caret);
  }

  document.addEventListener("input", function (event) {
    if (event.target && event.target.id === "note_body") update();
  });

  document.addEventListener("click", function (event) {
    if (event.target && event.target.id === "note_body") update();
  });

  // Captured before console.js's Enter-sends handler: while the picker is open, Enter picks.
  document.addEventListener("keydown", function (event) {
    if (!picker.open || !event.target || event.target.id !== "note_body") return;
    var n = picker.items.length;
    if (event.key === "ArrowDown" || event.key === "ArrowUp") {
      picker.active = (picker.active + (event.key === "ArrowDown" ? 1 : n - 1)) % n;
      showActive();
    } else if ((event.key === "Enter" || event.key === "Tab") && !event.isComposing && !event.shiftKey) {
      choose(picker.active);
    } else if (event.key === "Escape") {
      close();
    } else {
      return;
    }
    event.preventDefault();
    event.stopImmediatePropagation();
  }, true);

  document.addEventListener("mousedown", function (event) {
    var li = event.target.closest && event.target.closest("#mention-list [role=option]");
    if (!li) return;
    event.preventDefault(); // the note box keeps the focus
    choose(Array.prototype.indexOf.call(li.parentNode.children, li));
  });

  document.addEventListener("focusout", function (event) {
    if (event.target && event.target.id === "note_body") setTimeout(function () {
      if (document.activeElement !== field()) close();
    }, 0);
  });

  document.addEventListener("htmx:afterSwap", function (event) {
    if (event.target && event.target.id === "composer") { close(); markField(); }
  });
})();
