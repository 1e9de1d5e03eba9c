// The proactive part (widget-proactive.js): the rules of the config's `proactive_messages`, evaluated in
// the visitor's page, and the bubble the one that matches shows by the launcher. widget.js adds it only
// when the config carries proactive messages or the page calls `trigger(name)`; its Preact is
// widget.js's own (build.mjs), so the bubble renders in the widget's tree and shadow root.
//
// - Rules: `url_patterns` are globs (`*` any characters, `?` one) matched against the whole of
//   location.href, read again when a single-page site moves (history.pushState, replaceState,
//   popstate); `time_on_page_seconds` counts from the page's load or its last such move;
//   `visits_at_least` counts visits in localStorage, a visit being a new browser-tab session
//   (sessionStorage), the current one included; `attributes` are the values the page gave to
//   `setAttributes` (widget.js keeps them in `ChatWidget.attributes`); `only_when_open` reads the
//   config's `open` (business hours). The largest `priority` that matches shows (the config lists them
//   in that order); at most one bubble per page, none while the widget is open or once the visitor has
//   a conversation.
// - Frequency caps live in the browser: `once` in localStorage, `once_per_session` in sessionStorage,
//   `always` none. A bubble counts as shown when it appears.
// - `trigger(name)` ignores the rules and keeps the cap.
import { useEffect, useState } from "preact/hooks";

const api = window.ChatWidget;
const CSS =
  ".pro{position:fixed;z-index:var(--z);max-width:280px;display:flex;align-items:flex-start;gap:8px;padding:10px;border-radius:var(--radius);background:var(--bg);color:var(--text);box-shadow:0 4px 16px rgba(0,0,0,.2);font:14px/1.4 var(--font)}" +
  ".pro-open{all:unset;cursor:pointer;display:flex;gap:8px;flex:1;min-width:0;border-radius:4px}" +
  ".pro-open:focus-visible,.pro-x:focus-visible{outline:3px solid var(--focus);outline-offset:2px}" +
  ".pro-av{flex:none;width:32px;height:32px;border-radius:50%;overflow:hidden;display:grid;place-items:center;background:var(--primary);color:var(--primary-text);font-weight:600}" +
  ".pro-av img{width:100%;height:100%;object-fit:cover}" +
  ".pro-who{display:block;font-weight:600;font-size:13px}" +
  ".pro-text{display:block;white-space:pre-wrap;overflow-wrap:anywhere}" +
  ".pro-x{flex:none;border:0;background:none;color:inherit;cursor:pointer;font-size:18px;line-height:1;padding:2px 6px;border-radius:4px}";

function style() {
  if (!api.root || api._proactiveStyle) return;
  api._proactiveStyle = true;
  try {
    const sheet = new CSSStyleSheet();
    sheet.replaceSync(CSS);
    api.root.adoptedStyleSheets = [...api.root.adoptedStyleSheets, sheet];
  } catch (e) {
    const tag = document.createElement("style");
    if (api.nonce) tag.nonce = api.nonce;
    tag.textContent = CSS;
    api.root.appendChild(tag);
  }
}

function store(kind) {
  try {
    return kind === "session" ? sessionStorage : localStorage;
  } catch (e) {
    return null;
  }
}

function read(kind, key) {
  try {
    return JSON.parse(store(kind).getItem(key) || "null");
  } catch (e) {
    return null;
  }
}

function write(kind, key, value) {
  try {
    store(kind).setItem(key, JSON.stringify(value));
  } catch (e) {
    /* storage refused (private mode): the cap lasts this page */
  }
}

const SHOWN = `chatwidget:proactive:${api.guid}`;
const VISITS = `chatwidget:visits:${api.guid}`;
const pageCaps = {};

// This visit's number: a tab session that has not counted itself yet adds one in localStorage.
function visits() {
  const counted = read("session", VISITS);
  if (counted) return counted;
  const next = (read("local", VISITS) || 0) + 1;
  write("local", VISITS, next);
  write("session", VISITS, next);
  return next;
}

const VISIT = visits();

function capped(m) {
  if (m.frequency === "always") return false;
  const kind = m.frequency === "once_per_session" ? "session" : "local";
  return pageCaps[m.id] || (read(kind, SHOWN) || []).includes(m.id);
}

function cap(m) {
  pageCaps[m.id] = m.frequency !== "always";
  if (m.frequency === "always") return;
  const kind = m.frequency === "once_per_session" ? "session" : "local";
  const ids = read(kind, SHOWN) || [];
  if (!ids.includes(m.id)) write(kind, SHOWN, [...ids, m.id]);
}

export function glob(pattern) {
  const body = pattern.replace(/[.+^${}()|[\]\\]/g, "\\$&").replace(/\*/g, ".*").replace(/\?/g, ".");
  return new RegExp(`^${body}$`);
}

// Whether `m`'s rules hold now; `waitMs` learns how long until its time on page is reached.
function matches(m, ctx) {
  const r = m.rules || {};
  const patterns = r.url_patterns || [];
  if (patterns.length && !patterns.some((p) => glob(p).test(ctx.href))) return false;
  if ((r.visits_at_least || 1) > ctx.visits) return false;
  if (r.only_when_open && ctx.hoursOpen === false) return false;
  const attrs = api.attributes || {};
  for (const [key, value] of Object.entries(r.attributes || {})) if (attrs[key] !== value) return false;
  const left = (r.time_on_page_seconds || 0) * 1000 - (Date.now() - ctx.since);
  if (left > 0) {
    ctx.waitMs = Math.min(ctx.waitMs, left);
    return false;
  }
  return true;
}

function post(id, kind) {
  fetch(`${api.origin}/api/visitor/v1/${api.guid}/proactive/${id}/events`, {
    method: "POST",
    headers: { "Content-Type": "application/json" },
    body: JSON.stringify({ kind }),
    credentials: "omit",
    keepalive: true,
  }).catch(() => {});
}

// A single-page site's moves: history.pushState / replaceState and popstate call `fn`.
let moved = () => {};
for (const name of ["pushState", "replaceState"]) {
  const original = history[name];
  history[name] = function () {
    const result = original.apply(this, arguments);
    moved();
    return result;
  };
}
addEventListener("popstate", () => moved());

function text(m, language) {
  const texts = m.text_i18n || {};
  return texts[language] || texts.en || Object.values(texts)[0] || "";
}

// `messages`: the config's, largest priority first. `trigger`: {name, n} of the page's last
// trigger(name) call. `busy`: the widget is open or the visitor has a conversation (no rule shows a
// bubble). `onOpen(message, text)`: the visitor clicked the bubble (or trigger ran while open).
function Proactive({ messages, trigger, open, busy, hoursOpen, language, t, at, showAvatars, onOpen, onShown }) {
  const [current, setCurrent] = useState(null);
  const [page, setPage] = useState(() => ({ href: location.href, since: Date.now(), done: false }));
  const [, setTick] = useState(0);
  style();

  function show(m) {
    cap(m);
    post(m.id, "shown");
    setPage((p) => ({ ...p, done: true }));
    if (open) return onOpen(m, text(m, language));
    setCurrent(m);
    onShown();
  }

  useEffect(() => {
    moved = () => location.href !== page.href && setPage({ href: location.href, since: Date.now(), done: false });
    api._proactiveRedraw = () => setTick((n) => n + 1); // the page's setAttributes
  });

  // The rules, evaluated again on every draw (attributes, the business hours, a move) and when the
  // nearest time on page is reached.
  useEffect(() => {
    if (page.done || current || busy) return undefined;
    const ctx = { href: page.href, since: page.since, visits: VISIT, hoursOpen, waitMs: Infinity };
    const found = messages.find((m) => !capped(m) && matches(m, ctx));
    if (found) {
      show(found);
      return undefined;
    }
    if (ctx.waitMs === Infinity) return undefined;
    const timer = setTimeout(() => setTick((n) => n + 1), ctx.waitMs + 50);
    return () => clearTimeout(timer);
  });

  useEffect(() => {
    if (!trigger) return;
    const m = messages.find((x) => x.name === trigger.name);
    if (m && !capped(m)) show(m);
  }, [trigger && trigger.n]);

  useEffect(() => {
    if (open && current) setCurrent(null);
  }, [open]);

  if (!current || open) return null;
  const body = text(current, language);
  const sender = current.sender || {};
  const name = sender.name || "";
  return (
    <div
      class="pro"
      style={at}
      role="status"
      aria-live="polite"
      data-proactive={current.id}
      onKeyDown={(e) => e.key === "Escape" && setCurrent(null)}
    >
      <button
        type="button"
        class="pro-open"
        onClick={() => {
          post(current.id, "opened");
          setCurrent(null);
          onOpen(current, body);
        }}
      >
        {showAvatars && (
          <span class="pro-av" aria-hidden="true">
            {sender.avatar_url ? <img src={sender.avatar_url} alt="" /> : name.charAt(0).toUpperCase()}
          </span>
        )}
        <span>
          <span class="pro-who">{name}</span>
          <span class="pro-text">{body}</span>
        </span>
      </button>
      <button type="button" class="pro-x" aria-label={t.dismiss} title={t.dismiss} onClick={() => setCurrent(null)}>
        ×
      </button>
    </div>
  );
}

window.ChatWidget._parts.proactive = Proactive;
