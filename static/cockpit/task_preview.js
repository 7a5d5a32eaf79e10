// The cockpit's task preview: the task type's own script works as on a worker's page (keys,
// reordering, image rows), but nothing is ever submitted. Stands in for the shared work.js.
(function () {
  "use strict";

  const form = document.getElementById("task-form");
  if (!form) return;
  const statusLine = document.getElementById("task-status");

  function say(message) {
    statusLine.textContent = message;
  }

  function typingInField(target) {
    return target && (target.tagName === "TEXTAREA" || target.tagName === "SELECT" ||
      (target.tagName === "INPUT" && !["radio", "checkbox"].includes(target.type)));
  }

  form.addEventListener("submit", function (event) {
    event.preventDefault();
    say(form.dataset.msgDisabled);
  });

  window.crowdbenchTask = { form: form, say: say, typingInField: typingInField };

  document.addEventListener("DOMContentLoaded", function () {
    form.dataset.ready = "true";
  });
})();
