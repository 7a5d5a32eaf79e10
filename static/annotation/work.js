// Worker task pages, shared by every task type: timer, skip, submission to the API. Each type's
// own behaviour (keys, reordering, image rows) is in its script under static/annotation/tasks/.
// Worker-written text is only ever read or moved as DOM nodes, never written as HTML.
(function () {
  "use strict";

  const form = document.getElementById("task-form");
  if (!form) return;
  const statusLine = document.getElementById("task-status");
  const submitButton = document.getElementById("submit-button");

  function say(message) {
    statusLine.textContent = message;
  }

  // --- timer: runs from when the worker starts the task ---
  const timer = document.getElementById("task-timer");
  let handle = null;
  function runTimer(secondsLeft) {
    if (!timer) return;
    if (handle !== null) clearInterval(handle);
    const deadline = Date.now() + secondsLeft * 1000;
    const tick = function () {
      const left = Math.max(0, Math.round((deadline - Date.now()) / 1000));
      const minutes = Math.floor(left / 60);
      const seconds = String(left % 60).padStart(2, "0");
      timer.textContent = minutes + ":" + seconds;
      if (left === 0) {
        say(form.dataset.msgExpired);
        clearInterval(handle);
      }
    };
    handle = setInterval(tick, 1000);
    tick();
  }
  function showTimeLimit(secondsLeft) {
    if (!timer) return;
    timer.textContent = Math.floor(secondsLeft / 60) + ":" + String(secondsLeft % 60).padStart(2, "0");
  }

  // --- start: a task the page shows is held for a look only; the worker's first input starts it ---
  let started = null;
  function csrfToken() {
    return form.querySelector("input[name=csrfmiddlewaretoken]").value;
  }
  function start() {
    if (started === null) {
      started = fetch(form.dataset.startUrl, {
        method: "POST",
        headers: { "X-CSRFToken": csrfToken(), "Accept": "application/json" },
        credentials: "same-origin",
      }).then(async function (response) {
        const body = await response.json().catch(function () { return {}; });
        if (response.ok) {
          runTimer(Number(body.seconds_left));
          return true;
        }
        // 404: a look that ran out before the start leaves no task behind (the server removes it).
        say(response.status === 404 ? form.dataset.msgExpired : (body.detail || form.dataset.msgExpired));
        return false;
      }).catch(function () { return true; /* the submission still goes; it is refused if the time ran out */ });
    }
    return started;
  }
  if (timer) {
    const secondsLeft = Number(timer.dataset.secondsLeft);
    if (form.dataset.inPreview) {
      showTimeLimit(secondsLeft);
      // Giving the task back is not working on it: the skip button does not start it.
      const events = ["pointerdown", "keydown", "input", "change"];
      const onFirstInput = function (event) {
        const skip = document.getElementById("skip-button");
        if (skip && skip.contains(event.target)) return;
        events.forEach(function (name) { document.removeEventListener(name, onFirstInput, true); });
        start();
      };
      events.forEach(function (name) { document.addEventListener(name, onFirstInput, true); });
    } else {
      started = Promise.resolve(true);
      runTimer(secondsLeft);
    }
  }

  function typingInField(target) {
    return target && (target.tagName === "TEXTAREA" || target.tagName === "SELECT" ||
      (target.tagName === "INPUT" && !["radio", "checkbox"].includes(target.type)));
  }

  // What the task types' own scripts (static/annotation/tasks/<type>.js) build on.
  window.crowdbenchTask = { form: form, say: say, typingInField: typingInField };

  // --- skip: give the task back so another worker gets it ---
  const skipButton = document.getElementById("skip-button");
  if (skipButton) {
    skipButton.addEventListener("click", async function () {
      if (!window.confirm(form.dataset.msgSkipConfirm)) return;
      const token = form.querySelector("input[name=csrfmiddlewaretoken]").value;
      try {
        if (started !== null) await started;  // a start already sent is answered first
        const response = await fetch(form.dataset.returnUrl, {
          method: "POST",
          headers: { "X-CSRFToken": token, "Accept": "application/json" },
          credentials: "same-origin",
        });
        if (response.ok) {
          window.location.assign(form.dataset.nextUrl);
          return;
        }
        const body = await response.json().catch(function () { return {}; });
        say(body.detail || form.dataset.msgFailed);
      } catch (networkError) {
        say(form.dataset.msgFailed);
      }
    });
  }

  // --- free-text tasks: paste events and typing time go with the answers as "typing" ---
  if (form.dataset.recordsTyping) {
    const stats = { pastes: 0, pasted_chars: 0, typing_seconds: 0 };
    let lastInput = null;
    form.addEventListener("paste", function (event) {
      stats.pastes += 1;
      const text = event.clipboardData ? event.clipboardData.getData("text") : "";
      stats.pasted_chars += text.length;
    });
    form.addEventListener("input", function () {
      const now = performance.now();
      // Time between keystrokes counts as typing; a pause of over 5 s does not.
      if (lastInput !== null && now - lastInput < 5000) stats.typing_seconds += (now - lastInput) / 1000;
      lastInput = now;
    });
    form.addEventListener("formdata", function (event) {
      event.formData.set("typing", JSON.stringify({
        pastes: stats.pastes, pasted_chars: stats.pasted_chars,
        typing_seconds: Math.round(stats.typing_seconds * 10) / 10,
      }));
    });
  }

  // --- submit through the API; the server stores a repeated submission once ---
  let sending = false;
  form.addEventListener("submit", async function (event) {
    event.preventDefault();
    if (sending) return;
    sending = true;
    submitButton.disabled = true;
    say(form.dataset.msgSending);
    const token = csrfToken();
    try {
      if (form.dataset.inPreview && !(await start())) {
        // The look ran out before the start: reloading the page offers a task again.
        sending = false;
        submitButton.disabled = false;
        return;
      }
      const response = await fetch(form.action, {
        method: "POST",
        body: new FormData(form),
        headers: { "X-CSRFToken": token, "Accept": "application/json" },
        credentials: "same-origin",
      });
      let body = {};
      try {
        body = await response.json();
      } catch (parseError) {
        body = {};
      }
      if (response.ok) {
        say(form.dataset.msgSaved);
        window.location.assign(body.next_url || form.dataset.nextUrl);
        return;
      }
      say(body.detail || form.dataset.msgFailed);
    } catch (networkError) {
      say(form.dataset.msgFailed);
    }
    sending = false;
    submitButton.disabled = false;
  });

  // Marks the page interactive once the task type's own script (deferred, after this one) has run;
  // tests and styles can wait for it.
  document.addEventListener("DOMContentLoaded", function () {
    form.dataset.ready = "true";
  });
})();
