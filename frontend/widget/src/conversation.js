// The visitor's conversation over the visitor API and its websocket.
//
// - The session token lives in localStorage (`chatwidget:<guid>`), so it survives page loads and
//   is shared by every tab of the site (a `storage` event hands a token made in one tab to the
//   others). A session is made on the first message (or the offline form), never on a page view.
// - The socket is opened with `since=<the largest message id held>` (0 at first): the server
//   replays everything after it and then pushes live frames, so a reconnect misses nothing. Frames
//   are merged by message id, so a replay and a live push of one message show it once.
// - A dropped socket reconnects with backoff (0.5 s doubling to 10 s, at once when the page comes
//   back online or visible). Codes 4401 (the session is gone) forget the token; 4404 stops.
// - The room's state arrives as `chat` frames: live when it closes or a machine hands it to people,
//   and once after the replay of a room that is closed or waiting for a person (an open room sends
//   none). A close is kept as the id of the last message before it (`ended`, in localStorage), so
//   the "conversation ended" line stays where it was when the visitor writes on in the same chat.
//   `awaiting` (a hand-over nobody has answered) lasts until a person's message arrives.
// - The place in the routing queue (`queue`: `{position, wait}` or null) is read when the socket
//   opens (page load, reconnect) and after the visitor writes, then follows the `queue` frames
//   (null once an operator has the chat). Not read while the widget hides it (`showQueue`).
// - The page names the person with `setUser` (a session is made for it when there is none): when
//   the server moves the session to that person's one contact, the messages held belong to another
//   conversation, so they are dropped and the socket reconnects to replay the person's history.
//   `reset()` ends the session and shows the anonymous widget. `setAttributes` waits for a session
//   (none is made for it) and is kept in `attributes` for the page's rules meanwhile.
const warn = (e) => {
  console.warn("ChatWidget:", e && e.message ? e.message : e);
  return null;
};

export class Conversation {
  // `preview` (the console's widget builder): a storage key of its own and never a session, so the
  // owner's look at the widget is no visitor and no chat.
  constructor({ origin, guid, onChange, preview = false }) {
    this.origin = origin;
    this.guid = guid;
    this.base = `${origin}/api/visitor/v1/${guid}`;
    this.key = preview ? `chatwidget:preview:${guid}` : `chatwidget:${guid}`;
    this.onChange = onChange;
    this.onEvent = () => {}; // (name, payload): the page's `chat:started` and `chat:closed`
    this.messages = [];
    this.byId = {};
    this.state = "idle"; // idle | connecting | open | retrying
    this.operatorTyping = false;
    this.awaiting = false;
    this.queue = null;
    this.showQueue = true;
    this.ended = this.load().ended || [];
    this.socket = null;
    this.retry = 500;
    this.timer = 0;
    this.token = preview ? "" : this.load().token || "";
    this.clientId = this.load().client_id || "";
    this.attributes = {};
    this.pending = null; // attributes set before a session exists
    addEventListener("storage", (e) => {
      if (e.key !== this.key) return;
      const { token = "", client_id = "" } = this.load();
      // Another tab made a session, ended it, or its setUser moved the shared one to another contact.
      if (token !== this.token || client_id !== this.clientId) {
        this.token = token;
        this.clientId = client_id;
        this.reset();
        if (token) this.connect();
        this.changed();
      }
    });
    const wake = () => {
      if (this.token && this.state === "retrying") this.connect();
    };
    addEventListener("online", wake);
    document.addEventListener("visibilitychange", () => document.visibilityState === "visible" && wake());
  }

  load() {
    try {
      return JSON.parse(localStorage.getItem(this.key) || "{}");
    } catch (e) {
      return {};
    }
  }

  save(extra) {
    try {
      localStorage.setItem(this.key, JSON.stringify({ ...this.load(), ...extra }));
    } catch (e) {
      /* storage refused (private mode): the session lasts this page */
    }
  }

  changed() {
    this.onChange(this);
  }

  reset() {
    this.messages = [];
    this.byId = {};
    this.awaiting = false;
    this.queue = null;
    this.ended = [];
    if (this.socket) this.socket.close();
    this.socket = null;
  }

  lastId() {
    const last = this.messages[this.messages.length - 1];
    return last ? last.id : 0;
  }

  async request(path, { method = "GET", body, form } = {}) {
    const headers = {};
    if (this.token) headers.Authorization = `Visitor ${this.token}`;
    if (body !== undefined) headers["Content-Type"] = "application/json";
    const response = await fetch(this.base + path, {
      method,
      headers,
      body: form || (body !== undefined ? JSON.stringify(body) : undefined),
      credentials: "omit",
    });
    const data = await response.json().catch(() => ({}));
    if (response.status === 401 && this.token) {
      this.forget();
    }
    if (!response.ok) {
      const error = new Error(data.detail || data.title || `HTTP ${response.status}`);
      error.status = response.status;
      error.data = data; // problem+json: `errors` by field for the forms that show them
      throw error;
    }
    return data;
  }

  forget() {
    this.token = "";
    this.save({ token: "", ended: [] });
    this.reset();
    this.changed();
  }

  // One session at a time: a setUser at page load and the visitor's first message may both ask
  // before the first answer; they share it.
  ensureSession(profile) {
    if (this.token) return Promise.resolve(this.token);
    if (!this.starting) this.starting = this.startSession(profile).finally(() => (this.starting = null));
    return this.starting;
  }

  async startSession(profile) {
    const body = {};
    for (const key of ["name", "email", "phone", "locale", "page_url"]) {
      if (profile && profile[key]) body[key] = profile[key];
    }
    const data = await this.request("/sessions", { method: "POST", body });
    this.token = data.session_token;
    this.clientId = data.client_id;
    this.save({ token: this.token, client_id: data.client_id, user: "" });
    this.connect();
    if (this.pending) {
      const values = this.pending;
      this.pending = null;
      await this.request("/attributes", { method: "PATCH", body: values }).catch(warn);
    }
    return this.token;
  }

  // ChatWidget.setUser({id, hash, name?, email?, phone?, attributes?}). Resolves to the server's
  // `{verified, contact_id}` (null when refused: under `required` a wrong hash ends the session and
  // the widget goes on anonymous). The same call again for the same session sends nothing.
  async setUser(user, profile) {
    if (!user || (typeof user.id !== "string" && typeof user.id !== "number") || user.id === "") {
      warn(new Error("setUser needs {id, hash}"));
      return null;
    }
    const body = { id: String(user.id) };
    for (const key of ["hash", "name", "email", "phone", "attributes"]) if (user[key] != null) body[key] = user[key];
    const signature = JSON.stringify(body);
    try {
      await this.ensureSession(profile);
      if (this.load().user === signature) return this.load().identity || null;
      const data = await this.request("/identity", { method: "POST", body });
      const moved = data.contact_id !== this.clientId;
      this.clientId = data.contact_id;
      this.save({ client_id: data.contact_id, user: signature, identity: data, ...(moved ? { ended: [] } : {}) });
      if (moved) {
        this.reset(); // another person's conversation: the socket replays it from the start
        this.connect();
        this.changed();
      }
      return data;
    } catch (e) {
      warn(e);
      return null;
    }
  }

  // ChatWidget.setAttributes({key: value}): merged into the contact's attributes (now, or with the
  // session the visitor's first message makes).
  async setAttributes(values) {
    if (!values || typeof values !== "object" || Array.isArray(values)) return null;
    this.attributes = { ...this.attributes, ...values };
    if (!this.token) {
      this.pending = { ...this.pending, ...values };
      return null;
    }
    return this.request("/attributes", { method: "PATCH", body: values }).catch(warn);
  }

  // ChatWidget.reset(): the site's logout. The session ends; the widget forgets its token and its
  // messages and starts anonymous (a new session when the visitor next writes).
  async logout() {
    this.pending = null;
    this.attributes = {};
    if (this.token) await this.request("/sessions", { method: "DELETE" }).catch(() => {});
    this.clientId = "";
    this.save({ client_id: "", user: "", identity: null });
    this.forget();
  }

  merge(message) {
    if (!message || typeof message.id !== "number") return false;
    const known = this.byId[message.id];
    this.byId[message.id] = { ...known, ...message };
    if (known) {
      this.messages = this.messages.map((m) => (m.id === message.id ? this.byId[message.id] : m));
      return false;
    }
    this.messages = [...this.messages, this.byId[message.id]].sort((a, b) => a.id - b.id);
    return true;
  }

  connect() {
    clearTimeout(this.timer);
    if (!this.token) return;
    if (this.socket) {
      this.socket.onclose = null;
      this.socket.close();
    }
    const url = `${this.origin.replace(/^http/, "ws")}/ws/visitor/${this.guid}/?session=${encodeURIComponent(
      this.token,
    )}&since=${this.lastId()}`;
    const socket = new WebSocket(url);
    this.socket = socket;
    this.state = "connecting";
    socket.onopen = () => {
      this.state = "open";
      this.retry = 500;
      this.changed();
      this.readQueue();
    };
    socket.onmessage = (e) => {
      let frame;
      try {
        frame = JSON.parse(e.data);
      } catch (err) {
        return;
      }
      if (frame.event === "message") {
        const fresh = this.merge(frame.message);
        if (fresh && frame.message.author && frame.message.author.kind !== "client") {
          this.operatorTyping = false;
          if (frame.message.author.kind === "agent") this.awaiting = false; // a person answered
          this.onMessage && this.onMessage(frame.message);
        }
      } else if (frame.event === "chat") {
        if (frame.status === "expired") {
          // The room closed: remembered, so a widget that asks after a close still asks after a reload.
          this.save({ closed: frame.chat_id });
          if (this.markEnded()) this.onEvent("chat:closed", { chat_id: frame.chat_id });
        }
        if (typeof frame.awaiting_human === "boolean") this.awaiting = frame.awaiting_human;
      } else if (frame.event === "queue") {
        this.setQueue(frame.position, frame.estimated_wait_seconds);
      } else if (frame.event === "typing" && frame.by !== "client") {
        this.operatorTyping = frame.state === "start";
      } else if (frame.event === "seen" && frame.by !== "client") {
        for (const m of this.messages) if (m.id <= frame.message_id && m.author.kind === "client") m.seen = true;
        this.messages = [...this.messages];
      }
      this.changed();
    };
    socket.onclose = (e) => {
      if (this.socket !== socket) return;
      this.socket = null;
      this.operatorTyping = false;
      if (e.code === 4401) {
        this.forget();
        return;
      }
      if (e.code === 4404) {
        this.state = "idle";
        this.changed();
        return;
      }
      this.state = "retrying";
      this.changed();
      this.timer = setTimeout(() => this.connect(), e.code === 1008 ? 10000 : this.retry);
      this.retry = Math.min(this.retry * 2, 10000);
    };
  }

  setQueue(position, wait) {
    this.queue = typeof position === "number" ? { position, wait: typeof wait === "number" ? wait : null } : null;
  }

  async readQueue() {
    if (!this.token || !this.showQueue) return;
    try {
      const place = await this.request("/queue");
      this.setQueue(place.position, place.estimated_wait_seconds);
      this.changed();
    } catch (e) {
      /* the next frame or reconnect tells it */
    }
  }

  // The conversation ended after the last message held (once per close, the last 50 closes kept);
  // true when this close is news to this page.
  markEnded() {
    const after = this.lastId();
    if (!after || this.ended.indexOf(after) >= 0) return false;
    this.ended = [...this.ended, after].slice(-50);
    this.save({ ended: this.ended });
    return true;
  }

  // Posts a message; when its answer names a chat that no message held before it and no earlier
  // answer named (kept in localStorage, shared by the tabs), this message made the room. Read before
  // posting: the socket may bring the message back before its answer does.
  async post(body) {
    const known = [this.load().chat, ...this.messages.map((m) => m.chat_id)];
    const created = await this.request("/messages", { method: "POST", body });
    if (known.indexOf(created.chat_id) < 0) {
      this.save({ chat: created.chat_id });
      this.onEvent("chat:started", { chat_id: created.chat_id });
    }
    return created;
  }

  frame(data) {
    if (this.socket && this.socket.readyState === 1) this.socket.send(JSON.stringify(data));
  }

  // `proactiveId`: the proactive message this answers (its text opens a conversation this starts).
  async send(body, profile, proactiveId = 0) {
    await this.ensureSession(profile);
    const created = await this.post({ type: "text", body, ...(proactiveId ? { proactive_id: proactiveId } : {}) });
    this.merge({
      id: created.id,
      chat_id: created.chat_id,
      type: "text",
      body,
      author: { kind: "client", name: "" },
      created_at: created.created_at,
      seen: false,
    });
    this.changed();
    // The first message makes the room and may queue it before this socket has joined the room (later
    // moves reach the joined socket as frames); once a person has answered, nothing is read.
    if (!this.queue && !this.messages.some((m) => m.author && m.author.kind === "agent")) this.readQueue();
    return created;
  }

  async sendFile(file, profile) {
    await this.ensureSession(profile);
    const form = new FormData();
    form.append("file", file);
    const uploaded = await this.request("/files", { method: "POST", form });
    const type = /^image\//.test(uploaded.content_type) ? "image" : "file";
    await this.post({ type, file_id: uploaded.id });
    // The socket brings the message back with its signed URL.
  }

  typing(state, draft) {
    this.frame(typeof draft === "string" ? { type: "typing", state, draft } : { type: "typing", state });
  }

  seen(messageId) {
    this.frame({ type: "seen", message_id: messageId });
  }

  rate(value) {
    return this.request("/rating", { method: "POST", body: { value } });
  }

  async offline(form, profile) {
    await this.ensureSession(profile);
    return this.request("/offline", { method: "POST", body: form });
  }
}
