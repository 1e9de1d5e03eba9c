// The macro picker beside the composer: a button opens a listbox of the operator's macros; arrows
// move, Enter (or a click) runs the active one through the picker's form (htmx redraws the
// composer with the outcome; the transcript follows through the console socket), Escape closes.
// Without this script the form's select and Run button do the same job.
(function () {
  "use strict";
  if (window.consoleMacroPicker) return; // htmx re-runs the script when it redraws the composer
  window.consoleMacroPicker = true;

  var state = { active: 0 };

  function parts() {
    var root = document.querySelector("[data-macro-picker]");
    if (!root) return null;
    return {
      root: root,
      form: root.querySelector("form"),
      select: root.querySelector("select"),
      button: root.querySelector("#macro-button"),
      list: root.querySelector("#macro-list"),
      options: Array.prototype.slice.call(root.querySelectorAll("[role=option]")),
    };
  }

  function enhance() {
    var p = parts();
    if (!p || p.root.dataset.enhanced) return;
    p.root.dataset.enhanced = "1";
    p.root.querySelectorAll("[data-macro-fallback]").forEach(function (el) { el.hidden = true; });
    p.button.hidden = false;
  }

  function show(p) {
    p.options.forEach(function (option, index) {
      option.setAttribute("aria-selected", index === state.active ? "true" : "false");
    });
    var active = p.options[state.active];
    if (active) {
      p.list.setAttribute("aria-activedescendant", active.id);
      active.scrollIntoView({ block: "nearest" });
    }
  }

  function open(p) {
    state.active = 0;
    p.list.hidden = false;
    p.button.setAttribute("aria-expanded", "true");
    show(p);
    p.list.focus();
  }

  function close(p, focusButton) {
    p.list.hidden = true;
    p.button.setAttribute("aria-expanded", "false");
    p.list.removeAttribute("aria-activedescendant");
    if (focusButton) p.button.focus();
  }

  function run(p, index) {
    var option = p.options[index];
    if (!option) return;
    p.select.value = option.dataset.macroId;
    close(p, false);
    if (p.form.requestSubmit) p.form.requestSubmit();
    else p.form.submit();
  }

  document.addEventListener("click", function (event) {
    var p = parts();
    if (!p || !event.target.closest) return;
    if (event.target.closest("#macro-button")) {
      if (p.list.hidden) open(p);
      else close(p, true);
      return;
    }
    var option = event.target.closest("#macro-list [role=option]");
    if (option) run(p, p.options.indexOf(option));
  });

  document.addEventListener("keydown", function (event) {
    if (!event.target.matches) return;
    var p = parts();
    if (!p) return;
    if (event.target.matches("#macro-button") && (event.key === "ArrowDown" || event.key === "ArrowUp")) {
      open(p);
      event.preventDefault();
      return;
    }
    if (!event.target.matches("#macro-list")) return;
    var n = p.options.length;
    if (event.key === "ArrowDown" || event.key === "ArrowUp") {
      state.active = (state.active + (event.key === "ArrowDown" ? 1 : n - 1)) % n;
      show(p);
    } else if (event.key === "Home" || event.key === "End") {
      state.active = event.key === "Home" ? 0 : n - 1;
      show(p);
    } else if (event.key === "Enter" || event.key === " ") {
      run(p, state.active);
    } else if (event.key === "Escape" || event.key === "Tab") {
      close(p, event.key === "Escape");
      if (event.key === "Tab") return;
    } else {
      return;
    }
    event.preventDefault();
    event.stopPropagation();
  });

  document.addEventListener("htmx:afterSwap", enhance);
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", enhance);
  else enhance();
})();
