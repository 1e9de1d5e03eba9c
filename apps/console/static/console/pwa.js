/* The installable console: registers its service worker (apps.console.pwa, templates/console/sw.js).
   The worker's URL is this script tag's data-sw; a browser without service workers, or one that
   refuses (a private window, a plain-HTTP host other than localhost), simply uses the console as a
   web page. */
(function () {
  "use strict";
  var script = document.currentScript;
  if (!script || !("serviceWorker" in navigator)) return;
  var url = script.getAttribute("data-sw");
  var scope = script.getAttribute("data-scope");
  window.addEventListener("load", function () {
    navigator.serviceWorker.register(url, { scope: scope }).catch(function (error) {
      console.warn("service worker not registered:", error);
    });
  });
})();
