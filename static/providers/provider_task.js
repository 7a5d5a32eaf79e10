// Pages for workers sent by MTurk or Prolific. annotation/work.js runs the task (timer, keys,
// ranking); this script takes over submission: save on our server with the page's signed task
// token (no cookies: MTurk frames the page), then hand over to the provider.
(function () {
  "use strict";

  function handOverToMTurk(payload) {
    const mturkForm = document.getElementById("mturk-submit-form");
    if (payload) document.getElementById("mturk-answers").value = JSON.stringify(payload);
    document.getElementById("mturk-send").hidden = false;
    mturkForm.submit();
  }

  // Reload after a save whose hand-over did not happen: hand over now.
  const pending = document.getElementById("mturk-submit-form");
  if (pending && pending.dataset.auto === "true") {
    handOverToMTurk(null);
    return;
  }

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
        if (form.dataset.provider === "mturk") {
          handOverToMTurk(body.payload);
        } else if (body.redirect_url) {
          window.location.assign(body.redirect_url);
        }
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
