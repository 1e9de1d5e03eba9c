/* The operator console's live part: the operator websocket (/ws/agent/), the live chat list and
   history, typing both ways, presence, alerts of visitor messages and of chats assigned to the
   operator, SLA countdowns, and the replay after a reconnect. Forms and fragments are
   htmx; this file only listens to the socket and asks the server for the fragments it points at. */
(function () {
  "use strict";

  document.documentElement.classList.add("js"); // hides the buttons only a page without script needs
  var body = document.body;
  var wsPath = body.dataset.ws;
  if (!wsPath) return; // the sign-in page

  var chatId = body.dataset.chatId ? Number(body.dataset.chatId) : null;
  var csrf = JSON.parse(body.getAttribute("hx-headers") || "{}")["X-CSRFToken"] || "";
  var socket = null;
  var retry = 0;
  var everConnected = false;
  var holdUntil = 0;
  var operatorId = null; // this console's agent (the socket's ready frame)

  function $(id) { return document.getElementById(id); }

  // The page's words in the operator's language (the JSON block the server renders).
  var strings = {};
  try { strings = JSON.parse(($("console-strings") || {}).textContent || "{}") || {}; } catch (e) { strings = {}; }
  function t(key, fallback) { return strings[key] || fallback; }

  function setConnection(state, text) {
    var el = $("connection");
    if (!el) return;
    el.dataset.state = state;
    el.textContent = text;
  }

  // --- the history: what came after the last message shown -------------------------------------

  var fetching = false;
  var again = false;
  var panelAfterMessages = false;

  // The last message the server rendered (rows drawn from a frame are provisional: fetched again).
  function lastMessageId() {
    var items = document.querySelectorAll("#messages > li[data-id]:not(.provisional)");
    var last = 0;
    for (var i = 0; i < items.length; i++) last = Math.max(last, Number(items[i].dataset.id));
    return last;
  }

  function fetchNewMessages() {
    if (!chatId) return;
    if (fetching) { again = true; return; }
    fetching = true;
    var url = body.dataset.messagesUrl + "?after=" + lastMessageId();
    fetch(url, { credentials: "same-origin", headers: { "HX-Request": "true" } })
      .then(function (r) {
        if (r.status === 401 || r.redirected) { location.href = body.dataset.loginUrl; return ""; }
        return r.ok ? r.text() : "";
      })
      .then(function (html) {
        if (!html) return;
        var list = $("messages");
        var tpl = document.createElement("template");
        tpl.innerHTML = html;
        var added = false;
        Array.prototype.forEach.call(tpl.content.querySelectorAll("li[data-id]"), function (li) {
          var present = document.getElementById(li.id);
          if (!present) { list.appendChild(li); added = true; }
          else if (present.classList.contains("provisional")) present.replaceWith(li);
        });
        if (added) {
          list.lastElementChild.scrollIntoView({ block: "end" });
          list.dispatchEvent(new CustomEvent("console:appended", { bubbles: true }));
        }
      })
      .catch(function () { /* the next push or the reconnect replays */ })
      .then(function () {
        fetching = false;
        if (again) { again = false; fetchNewMessages(); return; }
        if (panelAfterMessages) { panelAfterMessages = false; refreshPanel(); }
      });
  }

  // A visitor's text message is drawn from its frame at once (text only, never as HTML), then
  // replaced by the server's rendering when the fetch above brings it.
  function drawFromFrame(message) {
    if (!message || !message.author || message.author.kind !== "client" || message.type !== "text") return;
    var list = $("messages");
    if (!list || document.getElementById("m-" + message.id)) return;
    var last = list.querySelector("li[data-id]:last-child");
    if (last && Number(last.dataset.id) > message.id) return; // out of order: the fetch places it
    var li = document.createElement("li");
    li.id = "m-" + message.id;
    li.dataset.id = String(message.id);
    li.className = "msg by-client provisional";
    var meta = document.createElement("div");
    meta.className = "meta";
    var author = document.createElement("span");
    author.className = "author";
    var name = document.createElement("bdi"); // the name keeps its own direction inside the page's
    name.textContent = ($("chat-title") || {}).textContent || t("visitor", "Visitor");
    author.appendChild(name);
    meta.appendChild(author);
    var text = document.createElement("div");
    text.className = "body";
    text.dir = "auto";
    text.textContent = message.body || "";
    li.appendChild(meta);
    li.appendChild(text);
    list.appendChild(li);
    li.scrollIntoView({ block: "end" });
  }

  // --- the list and the panel --------------------------------------------------------------------

  // The list's fragment is the same for every page: the open chat's row is marked here.
  document.addEventListener("htmx:afterSwap", function (event) {
    if (!chatId || !event.target || event.target.id !== "chat-list") return;
    var link = document.querySelector('#chat-list .chat-row[data-chat-id="' + chatId + '"] a');
    if (link) link.setAttribute("aria-current", "page");
  });

  var listTimer = null;
  function refreshList() {
    clearTimeout(listTimer);
    listTimer = setTimeout(function () {
      var form = $("filters");
      var params = form ? new URLSearchParams(new FormData(form)).toString() : "";
      var url = body.dataset.listUrl + (params ? "?" + params : "");
      if (window.htmx && $("chat-list")) htmx.ajax("GET", url, { target: "#chat-list", swap: "outerHTML" });
    }, 250); // after the history's own fetch, which the operator is waiting for
  }

  // The operator's pick of a transfer target survives a refresh of the panel until it is sent.
  var transferPick = "";
  document.addEventListener("change", function (event) {
    if (event.target && event.target.id === "transfer-agent") transferPick = event.target.value;
  });
  document.addEventListener("htmx:beforeRequest", function (event) {
    if (event.target && event.target.classList && event.target.classList.contains("transfer")) transferPick = "";
  });

  function refreshPanel() {
    if (!chatId || !window.htmx || !$("chat-panel")) return;
    // An open transfer choice or a visible error stays put: the operator is using it.
    var active = document.activeElement;
    if (active && $("chat-panel").contains(active) && active.tagName === "SELECT") return;
    if ($("confirm-spam")) return; // a question waiting for the operator's answer stays asked
    htmx.ajax("GET", body.dataset.panelUrl, { target: "#chat-panel", swap: "outerHTML" }).then(function () {
      var select = $("transfer-agent");
      if (transferPick && select && !select.value) select.value = transferPick;
    });
  }

  // --- typing ---------------------------------------------------------------------------------------

  var typingTimer = null;
  // `draft`: the visitor's text before it is sent (typing preview on), shown as text, never as HTML.
  function showVisitorTyping(state, draft) {
    var el = $("typing");
    if (!el) return;
    var preview = $("draft");
    clearTimeout(typingTimer);
    el.textContent = state === "start" ? t("visitor_typing", "The visitor is typing…") : "";
    if (preview && (state !== "start" || typeof draft === "string")) {
      preview.textContent = state === "start" ? draft : "";
      preview.hidden = state !== "start" || !draft;
    }
    if (state === "start") {
      typingTimer = setTimeout(function () {
        el.textContent = "";
        if (preview) { preview.textContent = ""; preview.hidden = true; }
      }, 6000);
    }
  }

  var lastStart = 0;
  var stopTimer = null;
  function sendTyping(state) {
    if (!chatId) return;
    var data = new URLSearchParams({ state: state });
    fetch(body.dataset.typingUrl, {
      method: "POST",
      credentials: "same-origin",
      headers: { "X-CSRFToken": csrf, "Content-Type": "application/x-www-form-urlencoded" },
      body: data.toString()
    }).catch(function () {});
  }

  document.addEventListener("input", function (event) {
    if (!event.target.matches || !event.target.matches("#reply_body")) return;
    var now = Date.now();
    if (now - lastStart > 3000) { lastStart = now; sendTyping("start"); }
    clearTimeout(stopTimer);
    stopTimer = setTimeout(function () { lastStart = 0; sendTyping("stop"); }, 4000);
  });

  // Enter sends the reply or the note; Shift+Enter adds a line.
  document.addEventListener("keydown", function (event) {
    if (event.key !== "Enter" || event.shiftKey || event.isComposing) return;
    if (!event.target.matches || !event.target.matches("#reply_body, #note_body")) return;
    event.preventDefault();
    var form = event.target.form;
    if (form.requestSubmit) form.requestSubmit(); else form.submit();
  });

  document.addEventListener("htmx:afterSwap", function (event) {
    if (event.target && event.target.id === "composer") {
      var field = $(event.target.dataset.mode === "note" ? "note_body" : "reply_body");
      if (field && !document.querySelector("#composer .error")) {
        clearTimeout(stopTimer);
        if (lastStart) { lastStart = 0; sendTyping("stop"); }
        field.focus();
      }
    }
  });

  body.addEventListener("console:messages", fetchNewMessages);
  body.addEventListener("console:list", refreshList);
  body.addEventListener("console:panel", refreshPanel);

  // --- presence ---------------------------------------------------------------------------------------

  function showPresence(status) {
    var button = $("presence");
    if (!button) return;
    button.dataset.status = status;
    button.setAttribute("aria-pressed", status === "online" ? "true" : "false");
    button.setAttribute("aria-label", status === "online"
      ? t("presence_online", "Presence: online. Toggle online or away")
      : t("presence_away", "Presence: away. Toggle online or away"));
    button.textContent = status === "online" ? t("online", "Online") : t("away", "Away");
  }

  document.addEventListener("click", function (event) {
    var button = event.target.closest && event.target.closest("#presence");
    if (!button || !socket || socket.readyState !== 1) return;
    var next = button.dataset.status === "online" ? "away" : "online";
    socket.send(JSON.stringify({ type: "status", status: next }));
  });

  // --- alerts: a visitor's message while the operator looks elsewhere ------------------------------
  // The tab's title counts the visitor messages that arrive while the page is hidden. With the
  // operator's Alerts switch on (kept in this browser), a visitor message in another chat than the
  // open one, or while the page is hidden, plays a short tone, and while the page is hidden shows a
  // desktop notification (once the browser allows them; asked when the switch is turned on, since
  // browsers ask only after a click). Only live pushes alert: a replay after a reconnect does not.

  var ALERTS_KEY = "console.alerts";
  var unread = 0;
  var alertsOn = false;
  try { alertsOn = localStorage.getItem(ALERTS_KEY) === "on"; } catch (e) { alertsOn = false; }
  var audio = null;

  function showUnread() {
    var title = document.title.replace(/^\(\d+\) /, "");
    document.title = unread ? "(" + unread + ") " + title : title;
  }

  function tone() {
    var Context = window.AudioContext || window.webkitAudioContext;
    if (!Context) return;
    try {
      if (!audio) audio = new Context();
      if (audio.state === "suspended") audio.resume();
      var oscillator = audio.createOscillator();
      var gain = audio.createGain();
      oscillator.frequency.value = 880;
      gain.gain.setValueAtTime(0.12, audio.currentTime);
      gain.gain.exponentialRampToValueAtTime(0.001, audio.currentTime + 0.25);
      oscillator.connect(gain);
      gain.connect(audio.destination);
      oscillator.start();
      oscillator.stop(audio.currentTime + 0.25);
    } catch (e) { /* no sound device: the title still counts */ }
  }

  function desktopNotice(frame) {
    if (!("Notification" in window) || Notification.permission !== "granted") return;
    var message = frame.message || {};
    var text = message.type === "text" ? (message.body || "") : t("alert_file", "A file");
    try {
      var notice = new Notification(t("alert_title", "New visitor message"), {
        body: text.length > 140 ? text.slice(0, 139) + "…" : text,
        tag: "chat-" + frame.chat_id
      });
      notice.onclick = function () {
        window.focus();
        location.href = body.dataset.listUrl + "chats/" + frame.chat_id + "/";
        notice.close();
      };
    } catch (e) { /* a browser that allows notifications only from a service worker */ }
  }

  function visitorMessageArrived(frame) {
    var message = frame.message;
    if (!message || !message.author || message.author.kind !== "client") return;
    if (document.hidden) { unread += 1; showUnread(); }
    if (!alertsOn || (!document.hidden && frame.chat_id === chatId)) return;
    tone();
    if (document.hidden) desktopNotice(frame);
  }

  document.addEventListener("visibilitychange", function () {
    if (!document.hidden && unread) { unread = 0; showUnread(); }
  });

  function showAlerts() {
    var button = $("alerts");
    if (!button) return;
    button.hidden = false;
    button.setAttribute("aria-pressed", alertsOn ? "true" : "false");
    button.textContent = alertsOn ? t("alerts_on", "Alerts on") : t("alerts_off", "Alerts off");
  }

  document.addEventListener("click", function (event) {
    if (!event.target.closest || !event.target.closest("#alerts")) return;
    alertsOn = !alertsOn;
    try { localStorage.setItem(ALERTS_KEY, alertsOn ? "on" : "off"); } catch (e) { /* this page only */ }
    if (alertsOn) {
      tone(); // the operator hears what an alert sounds like, and the click lets the page play sound
      if ("Notification" in window && Notification.permission === "default") Notification.requestPermission();
    }
    showAlerts();
  });

  showAlerts();

  // --- canned responses: `/` at the start of the reply opens a picker (a listbox the reply field drives)

  var picker = { open: false, items: [], active: -1, query: null, timer: null, seq: 0 };

  function pickerList() { return $("canned-list"); }

  function closePicker() {
    var list = pickerList();
    var field = $("reply_body");
    picker.open = false;
    picker.items = [];
    picker.active = -1;
    picker.query = null;
    if (list) { list.hidden = true; list.textContent = ""; }
    if (field) field.removeAttribute("aria-activedescendant");
  }

  function showActive() {
    var field = $("reply_body");
    var list = pickerList();
    if (!field || !list) return;
    Array.prototype.forEach.call(list.children, function (li, i) {
      li.setAttribute("aria-selected", i === picker.active ? "true" : "false");
      if (i === picker.active) li.scrollIntoView({ block: "nearest" });
    });
    if (picker.active >= 0) field.setAttribute("aria-activedescendant", "canned-opt-" + picker.items[picker.active].id);
    else field.removeAttribute("aria-activedescendant");
  }

  function drawPicker(items) {
    var list = pickerList();
    var field = $("reply_body");
    if (!list || !field) return;
    picker.items = items;
    picker.active = items.length ? 0 : -1;
    list.textContent = "";
    items.forEach(function (item) {
      var li = document.createElement("li");
      li.id = "canned-opt-" + item.id;
      li.setAttribute("role", "option");
      li.dataset.id = String(item.id);
      var code = document.createElement("strong");
      code.textContent = "/" + item.shortcut;
      li.appendChild(code);
      li.appendChild(document.createTextNode(" " + item.title));
      list.appendChild(li);
    });
    picker.open = items.length > 0;
    list.hidden = !picker.open;
    showActive();
  }

  function queryPicker(query) {
    if (query === picker.query) return;
    picker.query = query;
    clearTimeout(picker.timer);
    var seq = ++picker.seq;
    picker.timer = setTimeout(function () {
      fetch(body.dataset.cannedUrl + "?q=" + encodeURIComponent(query), { credentials: "same-origin" })
        .then(function (r) { return r.ok ? r.json() : { items: [] }; })
        .then(function (data) { if (seq === picker.seq && picker.query !== null) drawPicker(data.items || []); })
        .catch(function () {});
    }, 120);
  }

  function choose(index) {
    var item = picker.items[index];
    var field = $("reply_body");
    if (!item || !field) return;
    closePicker();
    fetch(body.dataset.cannedRenderUrl + item.id + "/", { credentials: "same-origin" })
      .then(function (r) { return r.ok ? r.json() : null; })
      .then(function (data) {
        if (!data) return;
        field.value = data.text;
        field.focus();
        field.setSelectionRange(field.value.length, field.value.length);
      })
      .catch(function () {});
  }

  // The reply field drives the picker's listbox, its active option announced through
  // aria-activedescendant (a textarea keeps its textbox role: ARIA allows no combobox role on it).
  // Set again when htmx redraws the composer.
  function markCombobox() {
    var field = $("reply_body");
    if (!field || !pickerList()) return;
    field.setAttribute("aria-autocomplete", "list");
    field.setAttribute("aria-controls", "canned-list");
  }
  markCombobox();

  document.addEventListener("input", function (event) {
    if (!event.target.matches || !event.target.matches("#reply_body") || !body.dataset.cannedUrl) return;
    var field = event.target;
    var match = /^\/([^\s\/]*)$/.exec(field.value);
    if (match) queryPicker(match[1]);
    else if (picker.query !== null) closePicker();
  });

  // Captured before the Enter-sends handler below: while the picker is open, Enter picks.
  document.addEventListener("keydown", function (event) {
    if (!picker.open || !event.target.matches || !event.target.matches("#reply_body")) return;
    var n = picker.items.length;
    if (event.key === "ArrowDown" || event.key === "ArrowUp") {
      picker.active = (picker.active + (event.key === "ArrowDown" ? 1 : n - 1)) % n;
      showActive();
    } else if (event.key === "Enter" && !event.isComposing) {
      choose(picker.active);
    } else if (event.key === "Escape") {
      closePicker();
    } else {
      return;
    }
    event.preventDefault();
    event.stopImmediatePropagation();
  }, true);

  document.addEventListener("mousedown", function (event) {
    var li = event.target.closest && event.target.closest("#canned-list [role=option]");
    if (!li) return;
    event.preventDefault(); // the composer keeps the focus
    choose(Array.prototype.indexOf.call(li.parentNode.children, li));
  });

  document.addEventListener("htmx:afterSwap", function (event) {
    if (event.target && event.target.id === "composer") { closePicker(); markCombobox(); }
  });

  // --- the composer: Reply and Private note as two tabs ---------------------------------------------

  function setMode(mode, focus) {
    var composer = $("composer");
    if (!composer) return;
    composer.dataset.mode = mode;
    [["reply", "tab-reply", "reply-panel", "reply_body"], ["note", "tab-note", "note-panel", "note_body"]].forEach(function (row) {
      var on = row[0] === mode;
      var tab = $(row[1]);
      var panel = $(row[2]);
      if (tab) { tab.setAttribute("aria-selected", on ? "true" : "false"); tab.tabIndex = on ? 0 : -1; }
      if (panel) panel.hidden = !on;
      if (on && focus && $(row[3])) $(row[3]).focus();
    });
  }

  function showMode() {
    var composer = $("composer");
    if (composer) setMode(composer.dataset.mode || "reply", false);
  }
  showMode();

  document.addEventListener("click", function (event) {
    var tab = event.target.closest && event.target.closest(".composer-tab");
    if (tab) setMode(tab.id === "tab-note" ? "note" : "reply", true);
  });

  document.addEventListener("keydown", function (event) {
    var tab = event.target.closest && event.target.closest(".composer-tab");
    if (!tab || (event.key !== "ArrowLeft" && event.key !== "ArrowRight")) return;
    event.preventDefault();
    var mode = tab.id === "tab-note" ? "reply" : "note";
    setMode(mode, false);
    $(mode === "note" ? "tab-note" : "tab-reply").focus();
  });

  document.addEventListener("htmx:afterSwap", function (event) {
    if (event.target && event.target.id === "composer") showMode();
    // The panel asking to confirm a destructive action takes the focus.
    if (event.target && event.target.id === "chat-panel") {
      var ask = $("confirm-spam");
      if (ask) ask.focus();
    }
  });

  // --- saved views: the filters as they are now, not as the page was drawn ---------------------------

  document.addEventListener("submit", function (event) {
    var save = event.target;
    var filters = $("filters");
    if (!save || save.id !== "save-view" || !filters) return;
    var data = new FormData(filters);
    Array.prototype.forEach.call(save.querySelectorAll("input[type=hidden]"), function (input) {
      if (input.name !== "csrfmiddlewaretoken" && data.has(input.name)) input.value = data.get(input.name);
    });
  });

  // --- read receipts: what the operator has in front of them is seen ----------------------------------

  var seenTimer = null;
  function markSeen() {
    if (!chatId || !body.dataset.seenUrl || document.hidden) return;
    clearTimeout(seenTimer);
    seenTimer = setTimeout(function () {
      fetch(body.dataset.seenUrl, { method: "POST", credentials: "same-origin", headers: { "X-CSRFToken": csrf } })
        .then(function (r) { if (r.ok) refreshList(); })
        .catch(function () {});
    }, 300);
  }
  document.addEventListener("visibilitychange", markSeen);
  document.addEventListener("console:appended", markSeen);
  markSeen();

  // The list's waiting times and counts move with the clock as well as with events.
  setInterval(function () { if (!document.hidden) refreshList(); }, 60000);

  // --- SLA countdowns: "SLA due in 4 min", redrawn every 30 s without a request --------------------------
  // The server draws each mark; this redraws its words from the same strings as time passes (a
  // breach turns the mark red when the list is next read: the breach timer decides, not the page).

  function slaText(seconds) {
    if (seconds <= 0) return t("sla_now", "SLA due now");
    var minutes = Math.ceil(seconds / 60);
    if (minutes < 120) return t("sla_minutes", "SLA due in %(minutes)s min").replace("%(minutes)s", String(minutes));
    return t("sla_hours", "SLA due in %(hours)s h").replace("%(hours)s", String(Math.floor(minutes / 60)));
  }

  function tickSla() {
    var now = Date.now();
    Array.prototype.forEach.call(document.querySelectorAll("time.sla-due"), function (el) {
      var due = Date.parse(el.getAttribute("datetime"));
      if (isNaN(due)) return;
      var seconds = (due - now) / 1000;
      var text = slaText(seconds);
      if (el.textContent !== text) el.textContent = text;
      if (el.parentNode && el.parentNode.classList) el.parentNode.classList.toggle("badge-warning", seconds <= 300);
    });
  }
  setInterval(tickSla, 30000);
  document.addEventListener("htmx:afterSwap", tickSla);

  // --- a chat assigned to me: the list re-reads, and the console says so -----------------------------
  // The owner who assigns from the queue does not hear about their own click.

  var ownAssigns = {};
  document.addEventListener("htmx:beforeRequest", function (event) {
    var form = event.target;
    if (form && form.classList && form.classList.contains("assign")) {
      var match = /chats\/(\d+)\/assign/.exec(form.getAttribute("action") || "");
      if (match) ownAssigns[match[1]] = true;
    }
  });

  function showAssigned(frame) {
    var notice = $("notice");
    if (!notice) return;
    notice.textContent = "";
    var link = document.createElement("a");
    link.href = body.dataset.listUrl + "chats/" + frame.chat_id + "/";
    link.textContent = t("assigned_title", "Chat assigned to you");
    var dismiss = document.createElement("button");
    dismiss.type = "button";
    dismiss.className = "btn btn-quiet";
    dismiss.setAttribute("aria-label", notice.dataset.dismiss || "Dismiss");
    dismiss.textContent = "×";
    dismiss.addEventListener("click", function () { notice.textContent = ""; });
    notice.appendChild(link);
    notice.appendChild(dismiss);
  }

  function chatAssigned(frame) {
    if (operatorId === null || frame.agent_id !== operatorId) return;
    if (ownAssigns[frame.chat_id]) { delete ownAssigns[frame.chat_id]; return; }
    if (frame.chat_id === chatId && !document.hidden) return; // taken in front of them (accept, reply)
    showAssigned(frame);
    if (document.hidden) { unread += 1; showUnread(); }
    if (!alertsOn) return;
    tone();
    if (document.hidden && "Notification" in window && Notification.permission === "granted") {
      try {
        var notice = new Notification(t("assigned_title", "Chat assigned to you"), { body: "", tag: "chat-" + frame.chat_id });
        notice.onclick = function () {
          window.focus();
          location.href = body.dataset.listUrl + "chats/" + frame.chat_id + "/";
          notice.close();
        };
      } catch (e) { /* notifications only from a service worker: the page's notice stays */ }
    }
  }

  // --- the keyboard: j/k through the list, r reply, n note, / canned, e close, ? the list -------------

  var dialog = $("shortcuts");
  var opener = $("shortcuts-open");
  if (opener && dialog && dialog.showModal) {
    opener.hidden = false;
    opener.addEventListener("click", function () { dialog.showModal(); });
  }

  function typingInto(target) {
    if (!target || !target.tagName) return false;
    var tag = target.tagName;
    if (tag === "TEXTAREA" || tag === "SELECT" || target.isContentEditable) return true;
    return tag === "INPUT" && !/^(radio|checkbox|button|submit|reset)$/i.test(target.type);
  }

  function go(step) {
    var links = Array.prototype.slice.call(document.querySelectorAll("#chat-list .chat-row > a"));
    if (!links.length) return;
    var index = -1;
    links.forEach(function (link, i) { if (link.getAttribute("aria-current") === "page") index = i; });
    var next = index < 0 ? 0 : Math.min(links.length - 1, Math.max(0, index + step));
    if (next !== index) location.href = links[next].href;
  }

  document.addEventListener("keydown", function (event) {
    if (event.defaultPrevented || event.ctrlKey || event.metaKey || event.altKey || event.isComposing) return;
    if (event.key === "Escape" && typingInto(event.target) && !picker.open) { event.target.blur(); return; }
    if (typingInto(event.target) || (dialog && dialog.open)) return;
    var handled = true;
    switch (event.key) {
      case "j": go(1); break;
      case "k": go(-1); break;
      case "r": setMode("reply", true); break;
      case "n": setMode("note", true); break;
      case "/":
        setMode("reply", true);
        var field = $("reply_body");
        if (field && !field.value) {
          field.value = "/";
          field.dispatchEvent(new Event("input", { bubbles: true }));
        }
        break;
      case "e":
        var close = $("close-chat");
        if (close) close.click(); else handled = false;
        break;
      case "?": if (dialog && dialog.showModal) dialog.showModal(); else handled = false; break;
      default: handled = false;
    }
    if (handled) event.preventDefault();
  });

  // --- the socket ---------------------------------------------------------------------------------------

  function onFrame(frame) {
    // Other scripts of the console (mentions.js) listen to the frames too.
    body.dispatchEvent(new CustomEvent("console:frame", { detail: frame }));
    switch (frame.event) {
      case "ready":
        retry = 0;
        operatorId = typeof frame.operator_id === "number" ? frame.operator_id : null;
        setConnection("open", t("connected", "Connected"));
        if (frame.status) showPresence(frame.status);
        // After a reconnect: whatever was written meanwhile (replay from the last message shown).
        if (everConnected) { fetchNewMessages(); refreshList(); refreshPanel(); }
        everConnected = true;
        break;
      case "message":
        visitorMessageArrived(frame);
        // A message may reopen or claim the chat: the panel is read again with the history.
        if (frame.chat_id === chatId) {
          drawFromFrame(frame.message);
          fetchNewMessages();
          panelAfterMessages = true;
          showVisitorTyping("stop");
        }
        refreshList();
        break;
      case "chat":
        refreshList();
        if (frame.chat_id === chatId) refreshPanel();
        break;
      case "assigned":
        // The chat joins its new owner's list and leaves the one of whoever lost it.
        refreshList();
        if (frame.chat_id === chatId) refreshPanel();
        chatAssigned(frame);
        break;
      case "typing":
        if (frame.chat_id === chatId && frame.by === "client") showVisitorTyping(frame.state, frame.draft);
        break;
      case "status":
        showPresence(frame.status);
        break;
    }
  }

  function connect() {
    var scheme = location.protocol === "https:" ? "wss://" : "ws://";
    setConnection("connecting", everConnected ? t("reconnecting", "Reconnecting…") : t("connecting", "Connecting…"));
    socket = new WebSocket(scheme + location.host + wsPath);
    socket.onmessage = function (event) {
      var frame;
      try { frame = JSON.parse(event.data); } catch (e) { return; }
      onFrame(frame);
    };
    socket.onclose = function (event) {
      socket = null;
      if (event.code === 4401) { location.href = body.dataset.loginUrl; return; }
      if (event.code === 4403) { setConnection("closed", t("not_an_operator", "You are no longer an operator of this widget.")); return; }
      var delay = Math.max(Math.min(5000, 250 * Math.pow(2, retry++)), holdUntil - Date.now());
      // 1008: the user's other consoles hold every socket; this one retries until a tab closes
      if (event.code === 1008) { delay = Math.max(delay, 5000); setConnection("connecting", t("too_many_consoles", "Too many consoles are open: close another tab.")); }
      else { setConnection("connecting", t("reconnecting", "Reconnecting…")); }
      setTimeout(connect, delay);
    };
  }

  // For tests: drop the socket as a network blip would, staying away `ms` milliseconds (it then
  // reconnects by itself and replays what it missed).
  window.consoleSocket = {
    drop: function (ms) { holdUntil = Date.now() + (ms || 0); if (socket) socket.close(); },
    isOpen: function () { return !!socket && socket.readyState === 1; }
  };

  connect();
})();
