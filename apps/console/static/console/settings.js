/* The settings pages' small helpers, for every area: copy buttons (`data-copy="<id of the field>"`),
   shown only when the script runs (without it the field is selectable by hand). */
(function () {
  "use strict";
  document.documentElement.classList.add("js");

  function copied(button) {
    var label = button.textContent;
    button.textContent = button.dataset.copied || label;
    setTimeout(function () { button.textContent = label; }, 1500);
  }

  function arm(root) {
    root.querySelectorAll("[data-copy]").forEach(function (button) {
      if (button.dataset.armed) return;
      button.dataset.armed = "1";
      button.hidden = false;
      button.addEventListener("click", function () {
        var field = document.getElementById(button.dataset.copy);
        if (!field) return;
        var text = field.value !== undefined ? field.value : field.textContent;
        if (navigator.clipboard && window.isSecureContext) {
          navigator.clipboard.writeText(text).then(function () { copied(button); }, function () {});
        } else {
          field.select();
          document.execCommand("copy");
          copied(button);
        }
      });
    });
  }

  arm(document);
  document.addEventListener("htmx:afterSettle", function (event) { arm(event.target); });
})();
