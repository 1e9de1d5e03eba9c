// The rule form: each row shows only the inputs its choice uses (without script every input shows
// and the server ignores the ones a choice does not read).
(function () {
  "use strict";

  function sync(row) {
    var choice = row.querySelector("select");
    if (!choice) return;
    var value = choice.value;
    row.querySelectorAll("[data-for-type]").forEach(function (field) {
      field.hidden = field.getAttribute("data-for-type").split(" ").indexOf(value) === -1;
    });
    row.querySelectorAll("[data-for-field]").forEach(function (field) {
      field.hidden = field.getAttribute("data-for-field") !== value;
    });
  }

  document.querySelectorAll(".automation-row").forEach(function (row) {
    sync(row);
    row.querySelector("select").addEventListener("change", function () {
      sync(row);
    });
  });
})();
