// Pages for workers sent by a crowd provider. annotation/work.js runs the task (timer, keys,
// ranking); this script takes over submission: save on our server with the page's signed task
// token (no cookies: a provider may frame the page), then announce "crowdbench:saved" on the form
// with the server's answer. The provider's own script (from its package) hands over from there.
(function () {
  "use strict";

  const form = document.getElementById("task-form");
  if (!form) return;
  const statusLine = document.getElementById("task-status");
  const submitButton = document.getElementById("submit-button");
  let sending = false;

  // Capture phase: runs before work.js's own submit handler, which it replaces on these pages.
  document.addEventListener("submit", async function (event) {
    if (event.target !== form) return;
    event.preventDefault();
    event.stopImmediatePropagation();
    if (sending) return;
    sending = true;
    submitButton.disabled = true;
    statusLine.textContent = form.dataset.msgSending;
    try {
      const response = await fetch(form.action, {
        method: "POST",
        body: new FormData(form),
        headers: { "X-Task-Token": form.dataset.taskToken, "Accept": "application/json" },
        credentials: "omit",
      });
      const body = await response.json().catch(function () { return {}; });
      if (response.ok) {
        statusLine.textContent = form.dataset.msgSaved;
        form.dispatchEvent(new CustomEvent("crowdbench:saved", { detail: body }));
        return;
      }
      statusLine.textContent = body.detail || form.dataset.msgFailed;
    } catch (networkError) {
      statusLine.textContent = form.dataset.msgFailed;
    }
    sending = false;
    submitButton.disabled = false;
  }, true);
})();
