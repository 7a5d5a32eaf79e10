// Prolific's part of the provider task page: once our server stored the answers, take the
// participant to Prolific's completion URL (the server only reveals it after the save).
(function () {
  "use strict";

  const form = document.getElementById("task-form");
  if (!form) return;
  form.addEventListener("crowdbench:saved", function (event) {
    if (event.detail.redirect_url) window.location.assign(event.detail.redirect_url);
  });
})();
