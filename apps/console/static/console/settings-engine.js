// The Macros area's form: each row shows only the input its type needs, and the empty rows past
// the first wait behind "Add an action". Without this script every row and input is shown.
(function () {
  "use strict";
  var MEMBER = {
    send_message: "text", add_note: "text", add_labels: "labels", remove_labels: "labels",
    assign_agent: "agent_id", assign_department: "department_id", close: "",
  };

  function fit(row) {
    var type = row.querySelector("[data-action-type]").value;
    row.querySelectorAll("[data-member]").forEach(function (field) {
      field.hidden = !type || MEMBER[type] !== field.dataset.member;
    });
  }

  function init() {
    var rows = Array.prototype.slice.call(document.querySelectorAll("[data-macro-row]"));
    if (!rows.length) return;
    var add = document.querySelector("[data-add-action]");
    rows.forEach(function (row) {
      fit(row);
      row.querySelector("[data-action-type]").addEventListener("change", function () { fit(row); });
      if (row.hasAttribute("data-spare")) row.hidden = true;
    });
    function spare() { return rows.filter(function (row) { return row.hidden; }); }
    if (add) {
      add.hidden = !spare().length;
      add.addEventListener("click", function () {
        var next = spare()[0];
        if (!next) return;
        next.hidden = false;
        next.querySelector("[data-action-type]").focus();
        add.hidden = !spare().length;
      });
    }
  }

  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", init);
  else init();
})();
