// The widget, mounted by loader.js into the open shadow root it made (`ChatWidget.root`).
import { render } from "preact";
import { useEffect, useRef, useState } from "preact/hooks";
import { Conversation } from "./conversation.js";
import { LANGUAGES, NATIVE, RTL, queueLine, resolveLanguage, texts } from "./i18n.js";
import { ICONS } from "./icons.js";
import { previewNotice, sampleNotice } from "./notices.js";
import * as shared from "./shared.js";
import { CSS } from "./styles.js";

const api = window.ChatWidget;
const preview = Boolean(api && api.preview);
const FONTS = {
  system: "system-ui,-apple-system,'Segoe UI',Roboto,'Noto Sans',Arial,sans-serif",
  inter: "Inter,system-ui,sans-serif",
  roboto: "Roboto,system-ui,sans-serif",
  open_sans: "'Open Sans',system-ui,sans-serif",
  pt_sans: "'PT Sans',system-ui,sans-serif",
  montserrat: "Montserrat,system-ui,sans-serif",
};
// Typing preview: a draft at most every 0.6 s (the server passes at most two a second on), the last one
// always sent.
const DRAFT_EVERY_MS = 600;
const DRAFT_MAX = 500;
// Presence is read again while the window is open (and on opening it): every PRESENCE seconds, or
// what the snippet's `data-presence-poll` says (1..300). A widget that hides itself while nobody is
// online (`widget_offline_mode: hide`) also reads it while closed, four times less often.
const loaderTag = document.querySelector('script[src*="/static/widget/loader.js"]');
const presenceSetting = parseFloat(loaderTag && loaderTag.getAttribute("data-presence-poll"));
const PRESENCE = presenceSetting >= 1 && presenceSetting <= 300 ? presenceSetting : 15;

// Parts a visitor may never need (links.js, extras.js, prechat.js) are built into widget-<name>.js and fetched
// the first time a view needs one, the way the loader fetches widget.js: a classic script from the
// service's origin under a content hash (`?v=`, filled in by build.mjs), with the loader's nonce.
// The first paint costs loader.js and widget.js alone (the size budget in test_embed_bundle.py).
const PARTS = __WIDGET_PARTS__;
const parts = {};
const asked = {};
let partArrived = () => {};

// The part `name` once it is here, else null after asking for it (one fetch at a time; after a
// failed one, the next view that needs it asks again once 5 s have passed, not on every keystroke's
// redraw); its arrival draws the widget again.
function part(name) {
  if (!parts[name] && !(Date.now() - (asked[name] ?? -Infinity) < 5000)) {
    asked[name] = Infinity;
    const tag = document.createElement("script");
    tag.src = `${api.origin}/static/widget/widget-${name}.js?v=${PARTS[name]}`;
    tag.async = true;
    if (api.nonce) tag.nonce = api.nonce;
    tag.onload = tag.onerror = () => {
      asked[name] = Date.now();
      tag.remove();
      if (parts[name]) partArrived();
    };
    document.head.appendChild(tag);
  }
  return parts[name] || null;
}

// A page's handler that throws is reported as the page's error, and the widget goes on.
function deliver(fn, payload) {
  try {
    fn(payload);
  } catch (e) {
    setTimeout(() => {
      throw e;
    });
  }
}

function emit(event, payload) {
  for (const fn of (api.handlers && api.handlers[event]) || []) deliver(fn, payload);
  // The competitor's hooks, so a migrating site keeps its callbacks.
  const legacy = {
    ready: "jivo_onLoadCallback",
    open: "jivo_onOpen",
    close: "jivo_onClose",
    message: "jivo_onMessageReceived",
  }[event];
  if (typeof window[legacy] === "function") deliver(window[legacy], payload);
}

// The legacy platform's `jivo_api`, for a site that swaps its snippet and keeps its code. Defined when
// widget.js loads (the legacy platform did not queue calls made before its widget loaded either);
// each call goes through `ChatWidget`, so it is queued until the widget is ready. `setCustomData`'s
// fields (`[{key?, title?, content, link?}]`) become attributes named by the key, else the title.
function legacyApi() {
  const ok = { result: "ok" };
  const run = (fn) => (...args) => (fn(...args), ok);
  const key = (f) =>
    String(f.key || f.title || "")
      .toLowerCase()
      .replace(/[^a-z0-9]+/g, "_")
      .replace(/^_|_$/g, "")
      .slice(0, 40);
  return {
    open: run(() => api.open()),
    close: run(() => api.close()),
    setContactInfo: run((c) => api.identify(c || {})),
    setCustomData: run((fields) =>
      api.setAttributes(Object.fromEntries((fields || []).filter((f) => f && key(f)).map((f) => [key(f), f.content]))),
    ),
    sendMessage: run((text) => api.send(text)),
  };
}
if (api && !api.preview && !window.jivo_api) window.jivo_api = legacyApi();

function Svg({ d }) {
  return (
    <svg viewBox="0 0 24 24" fill="none" stroke="currentColor" stroke-width="2" stroke-linecap="round" aria-hidden="true">
      <path d={d} />
    </svg>
  );
}

// Links found with linkify-it (the same algorithm and configuration as the server's link guard) by
// the links part: until it is here the text shows plain.
function Linked({ text, links }) {
  const matches = text && links ? links(text) : [];
  const out = [];
  let at = 0;
  for (const m of matches) {
    if (m.index > at) out.push(text.slice(at, m.index));
    out.push(
      <a href={m.url} target="_blank" rel="noopener noreferrer nofollow">
        {m.text}
      </a>,
    );
    at = m.lastIndex;
  }
  out.push(text ? text.slice(at) : "");
  return out;
}

function absolute(url) {
  return url && url.charAt(0) === "/" ? api.origin + url : url;
}

// A source's address as a link target: only an absolute http(s) URL (the server sends no other; the
// widget checks again so a `javascript:` or `data:` address can never become a link).
function webLink(url) {
  if (typeof url !== "string") return null;
  try {
    const protocol = new URL(url).protocol;
    return protocol === "https:" || protocol === "http:" ? url : null;
  } catch (e) {
    return null;
  }
}

// The knowledge-base documents an AI answer was built on, under it: a crawled page as a link opened
// in a new tab without the opener, an uploaded document as its title in plain text.
function Sources({ sources, t }) {
  return (
    <div class="src">
      <span class="src-h">{t.sources}</span>
      <ul>
        {sources.map((s) => {
          const href = webLink(s.url);
          return (
            <li>
              {href ? (
                <a href={href} target="_blank" rel="noopener noreferrer">
                  {s.title || href}
                </a>
              ) : (
                <span>{s.title}</span>
              )}
            </li>
          );
        })}
      </ul>
    </div>
  );
}

function Message({ m, t, settings, links }) {
  const mine = m.author && m.author.kind === "client";
  const system = m.author && m.author.kind === "system";
  const name = m.author && m.author.name;
  const showName = !mine && !system && settings.widget_show_agent_names !== false;
  let content;
  if (m.type === "image" && m.url) {
    content = <img src={absolute(m.url)} alt={(m.file && m.file.name) || ""} />;
  } else if (m.type === "file" && m.url) {
    content = (
      <a href={absolute(m.url)} target="_blank" rel="noopener noreferrer" download>
        {(m.file && m.file.name) || m.url}
      </a>
    );
  } else {
    content = <Linked text={m.body || ""} links={links} />;
  }
  const buttons = (m.type === "keyboard" && m.keyboard && m.keyboard.buttons) || [];
  const sources = Array.isArray(m.sources) ? m.sources.filter((s) => s && typeof s.title === "string") : [];
  return (
    <div class={`msg${mine ? " me" : ""}${system ? " sys" : ""}`} data-id={m.id} data-chat={m.chat_id} data-type={m.type}>
      <span class="sr">{mine ? t.you : name || t.operator}: </span>
      {showName && <span class="who" aria-hidden="true">{name || t.operator}</span>}
      {content}
      {buttons.length > 0 && (
        <div class="kb">
          {buttons.map((b) => (
            <a class={b.style === "secondary" ? "secondary" : ""} href={b.url} target="_blank" rel="noopener noreferrer">
              {b.label}
            </a>
          ))}
        </div>
      )}
      {sources.length > 0 && <Sources sources={sources} t={t} />}
    </div>
  );
}

// WCAG contrast: a tenant colour pair under 4.5:1 (the default blue under white text is 3.7:1) gets
// its background darkened (light text) or lightened (dark text) in small steps until it reads.
function luminance(hex) {
  const c = [1, 3, 5].map((i) => parseInt(hex.slice(i, i + 2), 16) / 255);
  const lin = c.map((v) => (v <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4));
  return 0.2126 * lin[0] + 0.7152 * lin[1] + 0.0722 * lin[2];
}

function contrast(a, b) {
  const [x, y] = [luminance(a), luminance(b)].sort((p, q) => q - p);
  return (x + 0.05) / (y + 0.05);
}

export function readable(bg, fg) {
  const hex = /^#[0-9a-f]{6}$/i;
  if (!hex.test(bg || "") || !hex.test(fg || "")) return bg;
  const darken = luminance(fg) > luminance(bg);
  let color = bg;
  for (let i = 0; i < 20 && contrast(color, fg) < 4.5; i++) {
    color =
      "#" +
      [1, 3, 5]
        .map((k) => {
          const v = parseInt(color.slice(k, k + 2), 16);
          const next = darken ? v * 0.92 : v + (255 - v) * 0.15;
          return Math.round(next).toString(16).padStart(2, "0");
        })
        .join("");
  }
  return color;
}

function deviceSettings(config) {
  const base = config.settings || {};
  // The builder's preview draws the device the owner picked, whatever the frame's width.
  const mobile = config.previewDevice ? config.previewDevice === "mobile" : matchMedia("(max-width: 640px)").matches;
  const profile = (base.device_profiles || {})[mobile ? "mobile" : "desktop"] || {};
  return { settings: { ...base, ...profile }, mobile };
}

function placement(position, x, y) {
  const [v, hz] = (position || "bottom_right").split("_");
  return { [v]: `${y}px`, [hz]: `${x}px` };
}

function Widget({ config, conversation }) {
  const { settings, mobile } = deviceSettings(config);
  // The builder's preview opens on the chat window: what the owner came to look at.
  const [open, setOpen] = useState(preview);
  const [, setTick] = useState(0);
  partArrived = () => setTick((n) => n + 1);
  const [chosenLanguage, setLanguage] = useState(() =>
    resolveLanguage(settings, api.language || conversation.load().language, navigator.languages),
  );
  // The builder's language picker wins in the preview.
  const language =
    preview && config.previewLanguage ? resolveLanguage(settings, config.previewLanguage, []) : chosenLanguage;
  const [profile, setProfile] = useState({});
  const [draft, setDraft] = useState("");
  const [error, setError] = useState("");
  const [busy, setBusy] = useState(false);
  const [unread, setUnread] = useState(0);
  const [hidden, setHidden] = useState(false);
  const [greeting, setGreeting] = useState(false);
  const [emoji, setEmoji] = useState(false);
  const [offlineSent, setOfflineSent] = useState(false);
  const [rated, setRated] = useState(() => conversation.load().rated || 0);
  const [introduced, setIntroduced] = useState(false);
  // Proactive messages (the proactive part): the page's last trigger(name), and the one the visitor
  // opened the chat from (shown as the chat's first message; the reply carries its id).
  const [triggered, setTriggered] = useState(null);
  const [pro, setPro] = useState(null);
  const [liveState, setLive] = useState({
    online: config.online,
    operators: config.operators,
    open: config.open,
    opensAt: config.opens_at,
    outside: config.outside_hours,
    people: config.people_online,
  });
  // The preview shows the widget as the builder asks (someone online or not), within business hours.
  const live = preview
    ? { ...liveState, open: true, online: config.previewOnline, people: config.previewOnline }
    : liveState;
  const textarea = useRef(null);
  const launcher = useRef(null);
  const log = useRef(null);
  const typingSent = useRef(0);
  const typingStop = useRef(0);
  const draftAt = useRef(0);
  const draftTimer = useRef(0);
  const openRef = useRef(open);
  openRef.current = open;
  const counted = useRef(0);
  // The page's `send(text)` calls, one after another (the first makes the session), with this
  // render's profile and language.
  const latest = useRef();
  const sending = useRef(Promise.resolve());

  const t = texts(language);
  const own = (config.texts && config.texts[language]) || {};
  const title = own.widget_name || settings.widget_name || config.name || t.title;
  const greetingText = own.widget_greeting || settings.widget_greeting || t.greeting;
  const online = live.online !== false;
  // The default signature promises a quick reply: shown only while someone is online.
  const signature = own.widget_signature || settings.widget_signature || (online ? t.signature : "");
  const messages = conversation.messages;
  // Outside business hours the widget's `outside_hours` mode decides: the offline form, the chat (the
  // AI answers), or no launcher unless a conversation is already there (it stays readable).
  const hours = live.open === false ? live.outside : "";
  const offlineMode =
    hours === "offline_form"
      ? "form"
      : hours === "ai_only"
        ? "chat"
        : hours === "hidden"
          ? messages.length || open
            ? "chat"
            : "hide"
          : online
            ? "chat"
            : settings.widget_offline_mode || "form";
  const features = config.features || {};
  const formAllowed = settings.widget_show_offline_form !== false && features.offline_form !== false;
  const formOffline = offlineMode === "form" && (hours === "offline_form" || formAllowed);
  // Closed by business hours: the header says so with the opening time, and shows no presence.
  const closedByHours = live.open === false;
  // A machine handed the chat to people and none is online: the offline form takes the composer's
  // place until a person is online again or answers.
  const handover = conversation.awaiting && live.people === false && formAllowed;
  // The place in line while routing makes the chat wait (the widget's `show_queue_position`).
  conversation.showQueue = config.show_queue_position !== false;
  const queueText =
    conversation.showQueue && conversation.queue
      ? queueLine(language, conversation.queue.position, conversation.queue.wait)
      : "";
  const lastOperator = [...messages].reverse().find((m) => m.author && !["client", "system"].includes(m.author.kind));
  const chatId = messages.length ? messages[messages.length - 1].chat_id : 0;

  useEffect(() => {
    conversation.onChange = () => setTick((n) => n + 1);
    conversation.onMessage = (m) => {
      // A replay (page load, reconnect) brings old messages too: only unseen ones are news.
      if (m.seen) return;
      emit("message", m);
      if (!openRef.current || document.visibilityState !== "visible") {
        setUnread((n) => n + 1);
        if (settings.widget_sound_enabled) beep();
      }
    };
    if (conversation.token) conversation.connect();
    conversation.onEvent = emit;
    api._widget = {
      open: (options) => {
        toggle(true);
        if (options && typeof options.message === "string") setDraft(options.message);
      },
      close: () => toggle(false),
      identify: (data) => setProfile((p) => ({ ...p, ...pick(data, ["name", "email", "phone"]) })),
      setLanguage: (code) => choose(code),
      show: () => setHidden(false),
      hide: () => (setHidden(true), toggle(false)),
      send: (text) => {
        const body = typeof text === "string" ? text.trim() : "";
        if (!body || preview) return;
        sending.current = sending.current.then(() => latest.current.post(body)).catch(() => latest.current.failed());
      },
      trigger: (name) => setTriggered((was) => ({ name: String(name), n: (was ? was.n : 0) + 1 })),
      setUser: (user) => conversation.setUser(user, sessionProfile()),
      reset: () => (setProfile({}), conversation.logout()),
      setAttributes: (values) => conversation.setAttributes(values),
    };
    // Through the loader's own calls: one the widget does not know yet stays queued.
    for (const [name, args] of api.q.splice(0)) if (typeof api[name] === "function") api[name](...args);
    emit("ready");
    // A `ready` handler added after the widget is ready runs at once.
    const on = api.on;
    api.on = (event, fn) => (on(event, fn), event === "ready" && deliver(fn), api);
    const timers = [];
    if (settings.widget_show_greeting && !conversation.load().greeted) {
      timers.push(setTimeout(() => setGreeting(true), (settings.widget_greeting_delay_sec || 0) * 1000));
    }
    if (settings.widget_auto_open_delay_sec > 0 && !conversation.load().opened && !preview) {
      timers.push(setTimeout(() => toggle(true), settings.widget_auto_open_delay_sec * 1000));
    }
    return () => timers.forEach(clearTimeout);
  }, []);

  useEffect(() => {
    if (counted.current !== unread) emit("unread", { count: (counted.current = unread) });
  }, [unread]);

  useEffect(() => {
    if (log.current) log.current.scrollTop = log.current.scrollHeight;
    if (open && document.visibilityState === "visible" && lastOperator && !lastOperator.seen) {
      conversation.seen(lastOperator.id);
      lastOperator.seen = true;
    }
  });

  // `online` and the operators' presence, read past every cache (the config is cacheable for 60 s).
  async function refreshPresence() {
    if (preview) return;
    try {
      const response = await fetch(`${api.origin}/api/visitor/v1/${api.guid}/config`, {
        credentials: "omit",
        cache: "no-store",
      });
      if (!response.ok) return;
      const fresh = await response.json();
      setLive({
        online: fresh.online,
        operators: fresh.operators,
        open: fresh.open,
        opensAt: fresh.opens_at,
        outside: fresh.outside_hours,
        people: fresh.people_online,
      });
    } catch (e) {
      /* offline or refused: keep what is shown, the next read tries again */
    }
  }

  useEffect(() => {
    if (open) refreshPresence();
    const hiding = settings.widget_offline_mode === "hide" || live.outside === "hidden";
    const every = open ? PRESENCE : hiding ? PRESENCE * 4 : 0;
    if (!every) return undefined;
    const read = () => document.visibilityState === "visible" && refreshPresence();
    const timer = setInterval(read, every * 1000);
    document.addEventListener("visibilitychange", read);
    return () => {
      clearInterval(timer);
      document.removeEventListener("visibilitychange", read);
    };
  }, [open]);

  function pick(data, keys) {
    const out = {};
    for (const k of keys) if (data && typeof data[k] === "string" && data[k].trim()) out[k] = data[k].trim();
    return out;
  }

  function choose(code) {
    const next = resolveLanguage(settings, code, []);
    setLanguage(next);
    conversation.save({ language: next });
  }

  function toggle(next) {
    if (next === openRef.current) return;
    openRef.current = next;
    setOpen(next);
    setGreeting(false);
    conversation.save({ greeted: 1, ...(next ? { opened: 1 } : {}) });
    if (next) {
      setUnread(0);
      setTimeout(() => textarea.current && textarea.current.focus());
    } else {
      setTimeout(() => launcher.current && launcher.current.focus());
    }
    emit(next ? "open" : "close");
  }

  function sessionProfile() {
    return { ...profile, locale: language, page_url: /^https?:/.test(location.href) ? location.href : "" };
  }

  async function send(e) {
    if (e) e.preventDefault();
    const body = draft.trim();
    if (!body || busy) return;
    if (preview) return setError(sampleNotice(language));
    setBusy(true);
    setError("");
    clearTimeout(typingStop.current);
    clearTimeout(draftTimer.current);
    if (typingSent.current) conversation.typing("stop");
    typingSent.current = 0;
    try {
      await post(body, pro && !messages.length ? pro.id : 0);
      setDraft("");
    } catch (err) {
      setError(t.failed);
    }
    setBusy(false);
    textarea.current && textarea.current.focus();
  }

  // `proactiveId`: the proactive message the visitor answers (it opens the conversation this starts).
  async function post(body, proactiveId = 0) {
    try {
      await conversation.send(body, sessionProfile(), proactiveId);
    } catch (err) {
      // The stored session expired (401 forgot it): the retry starts a new one.
      if (err.status !== 401) throw err;
      await conversation.send(body, sessionProfile(), proactiveId);
    }
  }
  latest.current = { post, failed: () => setError(t.failed) };

  // The draft as the visitor types, only while the widget's `typing_preview` is on.
  function sendDraft(text) {
    clearTimeout(draftTimer.current);
    const go = () => {
      draftAt.current = Date.now();
      typingSent.current = draftAt.current;
      conversation.typing("start", text.slice(0, DRAFT_MAX));
    };
    const wait = DRAFT_EVERY_MS - (Date.now() - draftAt.current);
    if (wait <= 0) go();
    else draftTimer.current = setTimeout(go, wait);
  }

  function onInput(e) {
    setDraft(e.target.value);
    const now = Date.now();
    if (conversation.token && settings.typing_preview) {
      sendDraft(e.target.value);
    } else if (conversation.token && now - typingSent.current > 3000) {
      conversation.typing("start");
      typingSent.current = now;
    }
    clearTimeout(typingStop.current);
    typingStop.current = setTimeout(() => {
      clearTimeout(draftTimer.current);
      if (typingSent.current) conversation.typing("stop");
      typingSent.current = 0;
    }, 4000);
  }

  function onKey(e) {
    if (e.key === "Enter" && !e.shiftKey && !e.isComposing) send(e);
  }

  async function upload(e) {
    const file = e.target.files && e.target.files[0];
    e.target.value = "";
    if (!file) return;
    if (preview) return setError(sampleNotice(language));
    setBusy(true);
    setError("");
    try {
      await conversation.sendFile(file, sessionProfile());
    } catch (err) {
      setError(t.failed);
    }
    setBusy(false);
  }

  async function rate(value) {
    if (preview) return setError(sampleNotice(language));
    try {
      await conversation.rate(value);
      setRated(chatId);
      conversation.save({ rated: chatId });
    } catch (err) {
      setError(t.failed);
    }
  }

  async function submitOffline(e) {
    e.preventDefault();
    const data = Object.fromEntries(new FormData(e.target));
    const form = pick(data, ["name", "email", "phone", "message"]);
    if (!form.message) return;
    if (preview) return setError(sampleNotice(language));
    setBusy(true);
    setError("");
    try {
      await conversation.offline(form, { ...sessionProfile(), ...pick(data, ["name", "email", "phone"]) });
      setOfflineSent(true);
    } catch (err) {
      setError(t.failed);
    }
    setBusy(false);
  }

  function submitPrechat(e) {
    e.preventDefault();
    setProfile((p) => ({ ...p, ...pick(Object.fromEntries(new FormData(e.target)), ["name", "email", "phone"]) }));
    setIntroduced(true);
    setTimeout(() => textarea.current && textarea.current.focus());
  }

  // The owner's pre-chat form (`prechat`): the session first (as the first message makes it), then
  // the answers; the chat follows. The answered form is kept per session token, so a reload does not ask again.
  async function answerPrechat(values) {
    if (preview) throw Object.assign(new Error("preview"), { notice: sampleNotice(language) });
    const post = async () => {
      await conversation.ensureSession(sessionProfile());
      await conversation.request("/prechat", { method: "POST", body: { values } });
    };
    await post().catch((err) => (err.status === 401 ? post() : Promise.reject(err)));
    conversation.save({ prechat: conversation.token });
    setProfile((p) => ({ ...p, ...pick(values, ["name", "email", "phone"]) }));
    setIntroduced(true);
    setTimeout(() => textarea.current && textarea.current.focus());
  }

  function onWindowKey(e) {
    if (e.key === "Escape") toggle(false);
  }

  if (offlineMode === "hide") return null;
  const radius = Math.min(settings.widget_border_radius ?? 12, 32);
  const size = settings.widget_button_size || 75;
  const primaryText = settings.widget_color_primary_text || "#FFFFFF";
  const vars = {
    "--primary": readable(settings.widget_color_primary || "#1E88E5", primaryText),
    "--primary-text": settings.widget_color_primary_text || "#FFFFFF",
    "--bg": settings.widget_color_background || "#FFFFFF",
    "--text": settings.widget_color_text || "#1F2933",
    "--agent": readable(settings.widget_color_agent_bubble || "#F1F3F4", settings.widget_color_text || "#1F2933"),
    "--agent-text": settings.widget_color_text || "#1F2933",
    "--visitor": readable(settings.widget_color_visitor_bubble || "#1E88E5", primaryText),
    "--visitor-text": settings.widget_color_primary_text || "#FFFFFF",
    "--button": readable(settings.widget_color_button || settings.widget_color_primary || "#1E88E5", primaryText),
    "--line": "rgba(127,127,127,.3)",
    "--focus": "#F9A825",
    "--radius": `${radius}px`,
    "--size": `${size}px`,
    "--w": `${settings.widget_chat_width || 370}px`,
    "--h": `${settings.widget_chat_height || 600}px`,
    "--z": String(settings.widget_z_index || 2147483000),
    "--font": FONTS[settings.widget_font_family] || FONTS.system,
  };
  const dark =
    settings.widget_theme === "dark" ||
    (settings.widget_theme === "auto" && matchMedia("(prefers-color-scheme: dark)").matches);
  if (dark) Object.assign(vars, { "--bg": "#1E1E1E", "--text": "#ECEFF1", "--agent": "#2C2C2C", "--agent-text": "#ECEFF1" });
  const buttonAt = placement(settings.widget_position, settings.widget_offset_x ?? 20, settings.widget_offset_y ?? 20);
  const windowAt = placement(
    settings.widget_position,
    settings.widget_chat_offset_x ?? 20,
    settings.widget_chat_offset_y ?? 90,
  );
  const bubbleAt = placement(settings.widget_position, settings.widget_offset_x ?? 20, (settings.widget_offset_y ?? 20) + size + 12);
  const preset = settings.icon_preset || "chat_bubble";
  const customIcon = config.icon_urls && config.icon_urls[preset];
  const supported = (settings.widget_supported_languages || LANGUAGES).filter((l) => NATIVE[l]);
  const showSwitcher = settings.widget_show_lang_switcher && supported.length > 1;
  // Closed, or handed over with nobody online: no presence in the header (nobody will answer now).
  const operators = closedByHours || handover ? [] : operatorList(live.operators || [], messages, settings.operators_display_mode);
  const ended = new Set(conversation.ended);
  // `rating_mode`: `on_request` asks after an operator's rate request (the one system message),
  // `after_close` also once the room closed, `off` never.
  const ratingMode = settings.rating_mode || "on_request";
  const askedInChat = messages.some((m) => m.chat_id === chatId && m.author && m.author.kind === "system");
  const closedChat = ratingMode === "after_close" && chatId && conversation.load().closed === chatId;
  const showRating =
    ratingMode !== "off" &&
    features.rating !== false &&
    settings.widget_show_rating !== false &&
    chatId > 0 &&
    rated !== chatId &&
    (askedInChat || closedChat);
  const ratePrompt = (settings.rating_prompt_i18n || {})[language] || t.rate;
  const offlineView = formOffline && (offlineSent || !messages.length);
  // The owner's pre-chat form (`prechat.when`: `always`, or `offline` while nobody answers) before the
  // first message; while it is on, the older one-line form (`widget_prechat_form_enabled`) never shows.
  const pre = settings.prechat || {};
  const preOn = pre.when === "always" || pre.when === "offline";
  const prechatForm =
    preOn && (pre.when === "always" || !online) && (pre.fields || []).length > 0 && !messages.length && !introduced &&
    !(conversation.token && conversation.load().prechat === conversation.token);
  // The pre-chat form: before the first message of a visitor without a session.
  const prechatView =
    !offlineView && !preOn && settings.widget_prechat_form_enabled && !conversation.token && !messages.length && !introduced;
  const prechatFields = (settings.widget_prechat_fields || ["name", "email"]).filter((f) => t[f]);
  const showButton = settings.widget_show_button !== false;
  // The extras part, asked for once the open window shows a form, the rating or the emoji list; the
  // links part once it shows a message. A pointer over the launcher or its focus asks ahead for
  // what the window would open on.
  const formView = offlineView || handover ? !offlineSent : prechatView;
  const extras = open && (formView || showRating || emoji) ? part("extras") : parts.extras;
  const links = open && messages.length ? part("links") : parts.links;
  const prechatPart = open && prechatForm ? part("prechat") : parts.prechat;
  const ahead = () => (prechatForm ? part("prechat") : formView ? part("extras") : messages.length && part("links"));
  const proactive = config.proactive_messages || [];
  const Proactive = !preview && (proactive.length || triggered) ? part("proactive") : null;

  return (
    <div
      class={`cw skin-${settings.widget_skin || "classic"}${mobile ? " mobile" : ""}`}
      style={vars}
      dir={RTL[language] ? "rtl" : "ltr"}
      lang={language}
    >
      {showButton && !hidden && (
        <button
          ref={launcher}
          type="button"
          class={`launcher anim-${settings.icon_custom_animated || "static"}`}
          style={buttonAt}
          aria-label={open ? t.close : t.open}
          aria-expanded={open ? "true" : "false"}
          aria-controls="cw-window"
          onClick={() => toggle(!open)}
          onPointerEnter={ahead}
          onFocus={ahead}
        >
          {open ? <Svg d={ICONS.close} /> : customIcon ? <img src={customIcon} alt="" /> : <Svg d={ICONS[preset] || ICONS.chat_bubble} />}
          {!open && unread > 0 && settings.widget_show_unread_badge !== false && (
            <span class="badge" aria-label={t.unread.replace("{n}", unread)}>
              {unread}
            </span>
          )}
        </button>
      )}
      {greeting && !open && showButton && !hidden && (
        <div class="bubble" style={bubbleAt} role="status">
          {greetingText}
        </div>
      )}
      {Proactive && showButton && (
        <Proactive
          messages={proactive}
          trigger={triggered}
          open={open}
          busy={open || messages.length > 0}
          hoursOpen={live.open}
          language={language}
          t={t}
          at={bubbleAt}
          showAvatars={settings.widget_show_agent_avatars !== false}
          onShown={() => setGreeting(false)}
          onOpen={(m, text) => {
            setPro({ id: m.id, m: { type: "text", body: text, author: { kind: "agent", name: (m.sender || {}).name || "" } } });
            toggle(true);
          }}
        />
      )}
      <div
        id="cw-window"
        class="win"
        style={windowAt}
        role="dialog"
        aria-label={title}
        hidden={!open}
        onKeyDown={onWindowKey}
      >
        <div class="head">
          <div class="t">
            <h2>{title}</h2>
            {closedByHours ? (
              <p class="closed" data-state="closed">
                {live.opensAt ? t.closedUntil.replace("{when}", opening(live.opensAt, language)) : t.closed}
              </p>
            ) : (
              <p>
                <span class={`dot${online && !handover ? " on" : ""}`} aria-hidden="true" />
                {online && !handover ? t.online : t.offline}
                {signature && !handover && ` · ${signature}`}
              </p>
            )}
            {operators.length > 0 && (
              <ul class="ops" aria-label={t.team}>
                {operators.slice(0, 3).map((op) => (
                  <li class="ops-item" title={op.name} data-presence={op.presence || ""}>
                    {settings.widget_show_agent_avatars !== false && (
                      <span class="av" aria-hidden="true">
                        {op.avatar_url ? <img src={op.avatar_url} alt="" /> : op.name.charAt(0).toUpperCase()}
                        {op.presence && <span class={`pres ${op.presence}`} />}
                      </span>
                    )}
                    {settings.widget_show_agent_names !== false && <span aria-hidden="true">{op.name}</span>}
                    <span class="sr">{op.presence ? `${op.name} (${t[op.presence]})` : op.name}</span>
                  </li>
                ))}
                {operators.length > 3 && <li class="ops-item">+{operators.length - 3}</li>}
              </ul>
            )}
          </div>
          {showSwitcher && (
            <select aria-label={t.language} value={language} onChange={(e) => choose(e.target.value)}>
              {supported.map((code) => (
                <option value={code}>{NATIVE[code]}</option>
              ))}
            </select>
          )}
          <button type="button" class="icon-btn" aria-label={t.close} onClick={() => toggle(false)}>
            <Svg d={ICONS.close} />
          </button>
        </div>
        {conversation.state === "retrying" && (
          <span class="note" role="status">
            {t.reconnecting}
          </span>
        )}
        {prechatForm ? (
          prechatPart ? (
            <prechatPart.PrechatForm
              t={t}
              form={pre}
              lang={language}
              fallback={settings.widget_fallback_language}
              privacyUrl={settings.widget_privacy_policy_url}
              submit={answerPrechat}
            />
          ) : (
            <div class="form" aria-busy="true" />
          )
        ) : prechatView ? (
          extras ? (
            <extras.PrechatForm t={t} settings={settings} profile={profile} fields={prechatFields} onSubmit={submitPrechat} />
          ) : (
            <div class="form" aria-busy="true" />
          )
        ) : offlineView ? (
          offlineSent ? (
            <div class="form" role="status">
              <p>{t.offlineSent}</p>
            </div>
          ) : extras ? (
            <extras.OfflineForm
              t={t}
              settings={settings}
              profile={profile}
              error={error}
              busy={busy}
              textarea={textarea}
              open={open}
              onSubmit={submitOffline}
            />
          ) : (
            <div class="form" aria-busy="true" />
          )
        ) : (
          <>
            <div class="log" ref={log} role="log" aria-live="polite" aria-label={t.messages} tabindex="0">
              {settings.widget_show_greeting !== false && <div class="msg">{greetingText}</div>}
              {pro && !messages.length && <Message m={pro.m} t={t} settings={settings} links={links} />}
              {messages
                .filter((m) => ratingMode !== "off" || !(m.author && m.author.kind === "system"))
                .map((m) => [
                  <Message key={m.id} m={m} t={t} settings={settings} links={links} />,
                  ended.has(m.id) && (
                    <div key={`ended-${m.id}`} class="ended" data-state="ended">
                      {t.ended}
                    </div>
                  ),
                ])}
              {showRating && extras && (
                <extras.Rating t={t} prompt={ratePrompt} thumbs={settings.rating_scale === "thumbs"} onRate={rate} />
              )}
              {rated && rated === chatId ? <div class="msg sys">{t.rated}</div> : null}
            </div>
            {settings.typing_preview && (
              <span class="note preview" data-notice="typing-preview">
                {previewNotice(language)}
              </span>
            )}
            {queueText && (
              <span class="queue" role="status" data-state="queue">
                {queueText}
              </span>
            )}
            {conversation.operatorTyping && settings.widget_show_typing_indicator !== false && (
              <span class="typing" role="status">
                {t.typing}
              </span>
            )}
            {error && !handover && (
              <span class="note" role="alert">
                {error}
              </span>
            )}
            {handover ? (
              <div class="handover" data-state="handover">
                <p class="why" role="status">
                  {t.handover}
                </p>
                {offlineSent ? (
                  <p role="status">{t.offlineSent}</p>
                ) : extras ? (
                  <extras.OfflineForm
                    t={t}
                    settings={settings}
                    profile={profile}
                    error={error}
                    busy={busy}
                    textarea={textarea}
                    open={open}
                    onSubmit={submitOffline}
                    brief
                  />
                ) : (
                  <div class="form" aria-busy="true" />
                )}
              </div>
            ) : (
              <form class="foot" onSubmit={send}>
                {settings.widget_show_emoji_picker !== false && (
                  <span class="emo">
                    <button type="button" class="icon-btn" aria-label="Emoji" aria-expanded={emoji ? "true" : "false"} onClick={() => setEmoji(!emoji)}>
                      <Svg d={ICONS.smile} />
                    </button>
                    {emoji && extras && (
                      <extras.EmojiList
                        onPick={(c) => {
                          setDraft(draft + c);
                          setEmoji(false);
                          textarea.current && textarea.current.focus();
                        }}
                      />
                    )}
                  </span>
                )}
                {settings.widget_show_file_upload !== false && features.file_upload !== false && (
                  <label class="icon-btn" aria-label={t.attach} title={t.attach}>
                    <Svg d={ICONS.clip} />
                    <input type="file" class="sr" aria-label={t.attach} onChange={upload} disabled={busy} />
                  </label>
                )}
                <textarea
                  ref={textarea}
                  rows="1"
                  aria-label={t.placeholder}
                  placeholder={settings.widget_input_placeholder || t.placeholder}
                  value={draft}
                  onInput={onInput}
                  onKeyDown={onKey}
                  maxLength={4096}
                />
                <button type="submit" class="send" aria-label={t.send} disabled={busy}>
                  <Svg d={ICONS.send} />
                </button>
              </form>
            )}
          </>
        )}
        {settings.widget_show_branding !== false && <span class="brand">{t.powered}</span>}
      </div>
    </div>
  );
}

// Operators in the header, by `operators_display_mode`: the config's `operators` (already chosen by
// the mode, with live presence: `online` those online, `all` every header-visible one, `single`
// one). For `single`, the operator who last answered this visitor stands for the team instead.
function operatorList(listed, messages, mode) {
  if (mode === "hidden") return [];
  if (mode !== "single") return listed;
  const last = [...messages].reverse().find((m) => m.author && m.author.name && !["client", "system"].includes(m.author.kind));
  if (!last) return listed.slice(0, 1);
  const known = listed.find((op) => op.name === last.author.name);
  return [known || { name: last.author.name, avatar_url: null, presence: null }];
}

// When a closed widget opens again, in the visitor's language and time zone: the time alone today,
// else the day and the time.
function opening(iso, language) {
  const at = new Date(iso);
  if (isNaN(at.getTime())) return "";
  const time = { hour: "2-digit", minute: "2-digit" };
  const today = at.toDateString() === new Date().toDateString();
  const options = today ? time : { weekday: "short", day: "numeric", month: "short", ...time };
  try {
    return new Intl.DateTimeFormat(language, options).format(at);
  } catch (e) {
    return at.toLocaleString();
  }
}

function beep() {
  try {
    const Audio = window.AudioContext || window.webkitAudioContext;
    const ctx = new Audio();
    const osc = ctx.createOscillator();
    const gain = ctx.createGain();
    gain.gain.value = 0.05;
    osc.connect(gain).connect(ctx.destination);
    osc.frequency.value = 880;
    osc.start();
    osc.stop(ctx.currentTime + 0.12);
  } catch (e) {
    /* no audio: silent */
  }
}

function applyStyles(root) {
  try {
    const sheet = new CSSStyleSheet();
    sheet.replaceSync(CSS);
    root.adoptedStyleSheets = [sheet];
  } catch (e) {
    const style = document.createElement("style");
    if (api.nonce) style.nonce = api.nonce;
    style.textContent = CSS;
    root.appendChild(style);
  }
}

async function boot() {
  if (!api || !api.root || api._booted) return;
  api._booted = true;
  api._parts = parts;
  api._preact = shared;
  const root = api.root;
  applyStyles(root);
  let config;
  try {
    const response = await fetch(`${api.origin}/api/visitor/v1/${api.guid}/config`, { credentials: "omit" });
    if (!response.ok) throw new Error(`config: HTTP ${response.status}`);
    config = await response.json();
  } catch (e) {
    console.warn("ChatWidget: the widget config could not be loaded", e);
    return;
  }
  // What the page gave to setAttributes (the proactive rules read it); calls queued before now count.
  api.attributes = {};
  for (const [name, args] of api.q) if (name === "setAttributes") Object.assign(api.attributes, args[0]);
  const setAttributes = api.setAttributes;
  api.setAttributes = (values) => {
    if (values && typeof values === "object") Object.assign(api.attributes, values);
    if (api._proactiveRedraw) api._proactiveRedraw();
    return setAttributes(values);
  };
  const conversation = new Conversation({ origin: api.origin, guid: api.guid, onChange: () => {}, preview });
  const mount = document.createElement("div");
  root.appendChild(mount);
  let shown = preview ? previewConfig(config, {}) : config;
  const draw = () => render(<Widget config={shown} conversation={conversation} />, mount);
  draw();
  api.host.setAttribute("data-ready", "1");
  if (preview) listenToBuilder(config, (next) => ((shown = next), draw()));
}

// The builder's unsaved values, taken only from the page that frames the preview and only when that
// page is the service's own (the console); the builder checks this page's origin in turn.
function listenToBuilder(config, show) {
  if (window.parent === window) return;
  addEventListener("message", (e) => {
    if (e.source !== window.parent || e.origin !== api.origin) return;
    const data = e.data || {};
    if (data.type !== "chat-widget:preview") return;
    show(previewConfig(config, data));
    api.host.setAttribute("data-preview-applied", String(Number(api.host.getAttribute("data-preview-applied") || 0) + 1));
  });
  window.parent.postMessage({ type: "chat-widget:ready" }, api.origin);
}

// The served config with the builder's values on top: the settings, the texts per language as the
// server would resolve them from those settings (manual translation, else the source text; AI
// translations show once saved), and the features the settings switch.
export function previewConfig(config, data) {
  const settings = { ...(config.settings || {}), ...((data && data.settings) || {}) };
  const matrix = settings.widget_text_translations || {};
  const texts = {};
  for (const code of settings.widget_supported_languages || LANGUAGES) {
    texts[code] = {};
    for (const name of ["widget_name", "widget_signature", "widget_greeting"]) {
      texts[code][name] = (matrix[code] || {})[name] || settings[name] || null;
    }
  }
  const features = {
    ...(config.features || {}),
    rating: settings.widget_show_rating !== false && settings.rating_mode !== "off",
    offline_form: settings.widget_show_offline_form !== false,
    file_upload: settings.widget_show_file_upload !== false,
  };
  return {
    ...config,
    settings,
    texts,
    features,
    previewOnline: !data || data.online !== false,
    previewLanguage: (data && data.language) || "",
    previewDevice: data && data.device === "mobile" ? "mobile" : "desktop",
  };
}

boot();
