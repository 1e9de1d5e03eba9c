// The types of `window.ChatWidget`, the chat widget's JavaScript API, served beside the loader at
// /static/widget/chat-widget.d.ts. Reference it from a TypeScript project:
//   /// <reference path="./chat-widget.d.ts" />
// Every call returns the API itself (so calls chain) and may be made before the widget is ready:
// it is queued and runs, in order, once the widget is.

export interface ChatWidgetUser {
  /** The person's id in your system, 1 to 128 characters. */
  id: string;
  /** Lowercase hex HMAC-SHA256 of `id` under the widget's identity secret, computed by your server. */
  hash?: string;
  name?: string;
  email?: string;
  phone?: string;
  attributes?: ChatWidgetAttributes;
}

/** Keys `[a-z0-9_]{1,40}`; at most 50 keys per contact, at most 500 characters a value. */
export type ChatWidgetAttributes = Record<string, string | number | boolean>;

export interface ChatWidgetProfile {
  name?: string;
  email?: string;
  phone?: string;
}

export interface ChatWidgetOpenOptions {
  /** Put in the composer, not sent: the visitor sends it (or changes it). */
  message?: string;
}

/** A message as the visitor API shows it (the visitor's websocket `message` frame). */
export interface ChatWidgetMessage {
  id: number;
  chat_id: number;
  type: "text" | "image" | "file" | "location" | "sticker" | "keyboard";
  body: string;
  markdown: string | null;
  file: { id: number; name: string; content_type: string; size: number } | null;
  url: string | null;
  keyboard: { buttons: Array<{ label: string; url: string; style?: string }> } | null;
  sources: Array<{ title: string; url: string | null }> | null;
  author: { kind: "client" | "agent" | "ai" | "system"; name: string };
  seen: boolean;
  created_at: string;
  [member: string]: unknown;
}

/** Each event's payload. */
export interface ChatWidgetEvents {
  /** Once, after the calls queued before it ran; a handler added later runs at once. */
  ready: void;
  open: void;
  close: void;
  /** A message to the visitor (an operator's, the AI's or the widget's own), as it arrives. */
  message: ChatWidgetMessage;
  /** The visitor's first message made the chat. */
  "chat:started": { chat_id: number };
  /** The chat was closed (by an operator, the API or the idle sweep). */
  "chat:closed": { chat_id: number };
  /** How many of those messages the visitor has not seen, whenever it changes (0 on opening). */
  unread: { count: number };
}

export type ChatWidgetEvent = keyof ChatWidgetEvents;

export interface ChatWidgetApi {
  /** The API's version (the loader's): 1. */
  readonly version: number;
  /** The service's origin the loader came from. */
  readonly origin: string;
  /** The widget's button guid. */
  readonly guid: string;

  /** Open the chat window; `message` pre-fills the composer (not sent). Opens a hidden widget's window too. */
  open(options?: ChatWidgetOpenOptions): ChatWidgetApi;
  /** Close the chat window. */
  close(): ChatWidgetApi;
  /** Show the launcher again after `hide()`. */
  show(): ChatWidgetApi;
  /** Hide the launcher and the greeting bubble (and close the window); `open()` still opens the window. */
  hide(): ChatWidgetApi;
  /** Send a message as the visitor (makes the session and the chat like a first message does); blank text is ignored. */
  send(text: string): ChatWidgetApi;
  /** Unverified details: sent when the session is made and pre-filled in the forms. */
  identify(profile: ChatWidgetProfile): ChatWidgetApi;
  /** A verified person (identity verification): their conversation on every device. */
  setUser(user: ChatWidgetUser): ChatWidgetApi;
  /** Log out: the session ends and the widget starts anonymous. */
  reset(): ChatWidgetApi;
  /** Merged into the contact's attributes; a call past the limits is refused whole. */
  setAttributes(values: ChatWidgetAttributes): ChatWidgetApi;
  /** Show the proactive message of this name (its rules ignored, its frequency kept). */
  trigger(name: string): ChatWidgetApi;
  /** One of `ru`, `en`, `el`, `de`, `es`, `ar`, `zh` (else the widget's fallback). */
  setLanguage(code: string): ChatWidgetApi;
  /** Start a widget embedded with `data-consent="required"`. */
  grantConsent(): ChatWidgetApi;
  on<E extends ChatWidgetEvent>(event: E, handler: (payload: ChatWidgetEvents[E]) => void): ChatWidgetApi;
  off<E extends ChatWidgetEvent>(event: E, handler: (payload: ChatWidgetEvents[E]) => void): ChatWidgetApi;
}

/** The legacy platform's API, mapped onto `ChatWidget` (defined once widget.js has loaded). */
export interface JivoApi {
  open(): { result: "ok" };
  close(): { result: "ok" };
  setContactInfo(info: ChatWidgetProfile & { description?: string }): { result: "ok" };
  setCustomData(fields: Array<{ title?: string; content: string | number | boolean; key?: string; link?: string }>): {
    result: "ok";
  };
  sendMessage(text: string): { result: "ok" };
}

declare global {
  interface Window {
    ChatWidget: ChatWidgetApi;
    jivo_api?: JivoApi;
    jivo_onLoadCallback?: () => void;
    jivo_onOpen?: () => void;
    jivo_onClose?: () => void;
    jivo_onMessageReceived?: (message: ChatWidgetMessage) => void;
  }
  const ChatWidget: ChatWidgetApi;
}
