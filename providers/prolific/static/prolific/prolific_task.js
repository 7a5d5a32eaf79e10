// Prolific's part of the provider task page: once our server stored the answers, take the
// participant to their next task in the same study session (tasks_per_participant), or to
// Prolific's completion URL (the server only reveals it after the save).
(function () {
  "use strict";

  const form = document.getElementById("task-form");
  if (!form) return;
  form.addEventListener("crowdbench:saved", function (event) {
    const next = document.getElementById("prolific-next-message");
    const statusLine = document.getElementById("task-status");
    if (event.detail.next_task && next && statusLine) statusLine.textContent = next.textContent;
    // A session Prolific does not confirm gets the server's message and no completion code.
    if (event.detail.message && statusLine) statusLine.textContent = event.detail.message;
    if (event.detail.redirect_url) window.location.assign(event.detail.redirect_url);
  });
})();
