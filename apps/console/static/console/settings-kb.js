/* The knowledge base page: the bytes of an upload sent so far, on the form's <progress> (htmx's
   htmx:xhr:progress); a refusal answered 413 (a file over the limit) is drawn like the others. */
(function () {
  "use strict";

  function uploadForm(event) {
    var form = event.target && event.target.closest ? event.target.closest("[data-kb-upload]") : null;
    return form;
  }

  document.addEventListener("htmx:xhr:progress", function (event) {
    var form = uploadForm(event);
    if (!form || !event.detail.lengthComputable) return;
    var bar = form.querySelector("[data-kb-progress]");
    var text = form.querySelector("[data-kb-progress-text]");
    var percent = Math.round((event.detail.loaded / event.detail.total) * 100);
    bar.hidden = false;
    bar.value = percent;
    if (text) text.textContent = percent + " %";
  });

  document.addEventListener("htmx:beforeRequest", function (event) {
    var form = uploadForm(event);
    if (!form) return;
    var bar = form.querySelector("[data-kb-progress]");
    bar.hidden = false;
    bar.value = 0;
    form.querySelector("button[type=submit]").disabled = true;
  });

  document.addEventListener("htmx:afterRequest", function (event) {
    var form = uploadForm(event);
    if (form) form.querySelector("button[type=submit]").disabled = false;
  });

  document.addEventListener("htmx:beforeSwap", function (event) {
    if (uploadForm(event) && event.detail.xhr.status === 413) {
      event.detail.shouldSwap = true;
      event.detail.isError = false;
    }
  });
})();
