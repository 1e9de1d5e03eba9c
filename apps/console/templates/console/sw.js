{% autoescape off %}/* The console's service worker (served by apps.console.pwa at /console/sw.js, scope /console/).

   It keeps the shell only: the console's CSS, scripts and icons, and the offline page. It never
   stores an API answer, a chat, a message or the HTML of a signed-in page: pages always come from
   the network, and only when the network fails does the worker answer with the offline page.
   A new shell (a deploy that changes a static file) is a new VERSION, so a new worker and cache. */
"use strict";

const VERSION = {{ version }};
const CACHE = "console-shell-" + VERSION;
const SHELL = {{ shell }};
const STATIC_PREFIX = {{ static_prefix }};
const OFFLINE_URL = {{ offline_url }};

self.addEventListener("install", (event) => {
  // "reload": the files as the server has them now, not an older copy from the HTTP cache
  event.waitUntil(
    caches
      .open(CACHE)
      .then((cache) => cache.addAll(SHELL.map((url) => new Request(url, { cache: "reload" }))))
      .then(() => self.skipWaiting()),
  );
});

self.addEventListener("activate", (event) => {
  event.waitUntil(
    (async () => {
      const names = await caches.keys();
      await Promise.all(
        names.filter((name) => name.startsWith("console-shell-") && name !== CACHE).map((name) => caches.delete(name)),
      );
      // the page's request starts while the worker wakes up, so going through it costs no time
      if (self.registration.navigationPreload) await self.registration.navigationPreload.enable();
      await self.clients.claim();
    })(),
  );
});

self.addEventListener("fetch", (event) => {
  const request = event.request;
  if (request.method !== "GET") return;
  const url = new URL(request.url);
  if (url.origin !== self.location.origin) return;
  if (request.mode === "navigate") {
    event.respondWith(page(event));
  } else if (url.pathname.startsWith(STATIC_PREFIX) && !url.search) {
    event.respondWith(shellFile(request));
  }
  // anything else (the API, the console's fragments and its socket, chat files) is not touched
});

// A page: always from the network, never stored; the offline page when the network fails.
async function page(event) {
  try {
    const preloaded = await event.preloadResponse;
    if (preloaded) return preloaded;
    return await fetch(event.request);
  } catch (error) {
    const cache = await caches.open(CACHE);
    return (await cache.match(OFFLINE_URL)) || Response.error();
  }
}

// A file of the shell: from the cache of this version, else fetched once and kept.
async function shellFile(request) {
  const cache = await caches.open(CACHE);
  const hit = await cache.match(request);
  if (hit) return hit;
  const response = await fetch(request);
  if (response.ok && response.type === "basic") await cache.put(request, response.clone());
  return response;
}

/* ---- Web Push (apps/push) -------------------------------------------------------------------
   The payload is JSON {title, body, url, tag}: a notification shows it, and a click focuses a
   console window at `url` (or opens one). */

self.addEventListener("push", (event) => {
  let data = {};
  try {
    data = event.data ? event.data.json() : {};
  } catch (error) {
    data = {};
  }
  const title = data.title || "Operator console";
  event.waitUntil(
    self.registration.showNotification(title, {
      body: data.body || "",
      tag: data.tag || undefined,
      // the chat to open; only a path of this console is ever followed (see notificationclick)
      data: { url: data.url || "./" },
    }),
  );
});

self.addEventListener("notificationclick", (event) => {
  event.notification.close();
  const target = new URL(event.notification.data && event.notification.data.url ? event.notification.data.url : "./", self.registration.scope);
  // a payload only ever names a page of this console: anything else opens the console's front page
  const url = target.origin === self.location.origin && target.href.startsWith(self.registration.scope) ? target.href : self.registration.scope;
  event.waitUntil(
    (async () => {
      const windows = await self.clients.matchAll({ type: "window", includeUncontrolled: true });
      for (const client of windows) {
        if (client.url.startsWith(self.registration.scope) && "navigate" in client) {
          await client.focus();
          return client.navigate(url);
        }
      }
      return self.clients.openWindow(url);
    })(),
  );
});

/* ---- end of Web Push ------------------------------------------------------------------------- */
{% endautoescape %}
