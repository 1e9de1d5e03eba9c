// The business-hours week editor: typing a time into a day marked closed opens that day (without
// script the owner unticks "Closed" by hand; a ticked day is saved closed whatever its rows say).
document.addEventListener("input", (event) => {
  const input = event.target;
  if (!(input instanceof HTMLInputElement) || !input.closest(".hours-interval") || !input.value) return;
  const closed = input.closest(".hours-day")?.querySelector('input[type="checkbox"][name$="-closed"]');
  if (closed) closed.checked = false;
});
