// MTurk's part of the provider task page: once our server stored the answers, post the
// assignment (and a copy of the answers, for reconciliation at sync) to MTurk's externalSubmit.
(function () {
  "use strict";

  const mturkForm = document.getElementById("mturk-submit-form");
  if (!mturkForm) return;

  function handOver(payload) {
    if (payload) document.getElementById("mturk-answers").value = JSON.stringify(payload);
    document.getElementById("mturk-send").hidden = false;
    mturkForm.submit();
  }

  // Reload after a save whose hand-over did not happen: hand over now.
  if (mturkForm.dataset.auto === "true") {
    handOver(null);
    return;
  }
  const form = document.getElementById("task-form");
  if (form) {
    form.addEventListener("crowdbench:saved", function (event) { handOver(event.detail.payload); });
  }
})();
