// The MTurk preview shows the task read-only: its form never submits (the fieldset is disabled too).
(function () {
  "use strict";

  document.querySelectorAll("form[aria-disabled=true]").forEach(function (form) {
    form.addEventListener("submit", function (event) { event.preventDefault(); });
  });
})();
