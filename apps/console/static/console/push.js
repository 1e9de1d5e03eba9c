/* The Notifications page (apps.console.push_views): allows Web Push on this device. Subscribes
   through the console's service worker with the server's VAPID public key, posts the browser's
   subscription to the page's subscribe URL, and marks this device's row (matched by a digest of the
   push endpoint; the page never holds the endpoint itself). Removing this device also unsubscribes
   the browser. Without the script the page still lists the devices, their choices and removal. */
(function () {
  "use strict";
  var section = document.getElementById("push-device");
  if (!section) return;
  var state = document.getElementById("push-state");
  var allow = document.getElementById("push-allow");
  var words = document.getElementById("push-words");

  function say(word) {
    var node = words && words.content.querySelector('[data-word="' + word + '"]');
    if (node) state.textContent = node.textContent;
  }

  function csrf() {
    try {
      return JSON.parse(document.body.getAttribute("hx-headers") || "{}")["X-CSRFToken"] || "";
    } catch (error) {
      return "";
    }
  }

  function keyBytes(base64url) {
    var padded = (base64url + "===".slice((base64url.length + 3) % 4)).replace(/-/g, "+").replace(/_/g, "/");
    var raw = atob(padded);
    var bytes = new Uint8Array(raw.length);
    for (var i = 0; i < raw.length; i++) bytes[i] = raw.charCodeAt(i);
    return bytes;
  }

  function digest(text) {
    return crypto.subtle.digest("SHA-256", new TextEncoder().encode(text)).then(function (buffer) {
      return Array.prototype.map
        .call(new Uint8Array(buffer), function (b) {
          return ("0" + b.toString(16)).slice(-2);
        })
        .join("")
        .slice(0, 32);
    });
  }

  function registration() {
    var sw = section.getAttribute("data-sw");
    var scope = sw.slice(0, sw.lastIndexOf("/") + 1);
    return navigator.serviceWorker.getRegistration(scope).then(function (found) {
      return found || navigator.serviceWorker.register(sw, { scope: scope });
    }).then(function () {
      return navigator.serviceWorker.ready;
    });
  }

  function markThisDevice(subscription) {
    if (!subscription) return Promise.resolve(null);
    return digest(subscription.endpoint).then(function (key) {
      var row = document.querySelector('[data-device-key="' + key + '"]');
      if (!row) return null;
      var badge = row.querySelector(".push-this");
      var label = words.content.querySelector('[data-word="this"]');
      if (badge && label) {
        badge.textContent = label.textContent;
        badge.hidden = false;
      }
      var removal = row.querySelector(".push-remove-form");
      if (removal) {
        removal.addEventListener("submit", function (event) {
          event.preventDefault();
          subscription.unsubscribe().catch(function () {}).then(function () {
            removal.submit();
          });
        });
      }
      return row;
    });
  }

  function post(subscription) {
    return fetch(section.getAttribute("data-subscribe-url"), {
      method: "POST",
      credentials: "same-origin",
      headers: { "Content-Type": "application/json", "X-CSRFToken": csrf() },
      body: JSON.stringify(subscription.toJSON()),
    }).then(function (response) {
      if (response.status !== 201) throw new Error("subscription refused: " + response.status);
    });
  }

  if (!("serviceWorker" in navigator) || !("PushManager" in window) || !("Notification" in window)) {
    say("unsupported");
    return;
  }
  if (Notification.permission === "denied") {
    say("denied");
    return;
  }

  var ready = registration();
  ready
    .then(function (reg) {
      return reg.pushManager.getSubscription();
    })
    .then(markThisDevice)
    .then(function (row) {
      say(row ? "on" : "off");
      allow.hidden = !!row;
    })
    .catch(function () {
      say("unsupported");
    });

  allow.addEventListener("click", function () {
    allow.disabled = true;
    say("working");
    Notification.requestPermission()
      .then(function (permission) {
        if (permission !== "granted") throw new Error(permission);
        return ready;
      })
      .then(function (reg) {
        return reg.pushManager.getSubscription().then(function (existing) {
          return (
            existing ||
            reg.pushManager.subscribe({
              userVisibleOnly: true,
              applicationServerKey: keyBytes(section.getAttribute("data-public-key")),
            })
          );
        });
      })
      .then(post)
      .then(function () {
        window.location.reload();
      })
      .catch(function (error) {
        say(Notification.permission === "denied" ? "denied" : "failed");
        allow.disabled = false;
        console.warn("push not allowed:", error);
      });
  });
})();
