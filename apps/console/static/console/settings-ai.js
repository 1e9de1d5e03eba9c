/* The AI area: a form marked `data-confirm="question"` (a destructive action) asks before it is sent.
   Without script the form is sent at once; the page it leads to says what happened. */
(function () {
  "use strict";
  document.addEventListener("submit", function (event) {
    var form = event.target;
    if (!(form instanceof HTMLFormElement) || !form.dataset.confirm) return;
    if (!window.confirm(form.dataset.confirm)) event.preventDefault();
  });
})();
