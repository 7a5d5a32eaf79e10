// Pairwise preference page: 1/← picks the left response, 2/→ the right one, Enter submits.
(function () {
  "use strict";

  const task = window.crowdbenchTask;
  if (!task) return;
  const form = task.form;
  const typingInField = task.typingInField;

  document.addEventListener("keydown", function (event) {
    if (event.altKey || event.ctrlKey || event.metaKey || typingInField(event.target)) return;
    let side = null;
    if (event.key === "1" || event.key === "ArrowLeft") side = "left";
    if (event.key === "2" || event.key === "ArrowRight") side = "right";
    if (side) {
      event.preventDefault();
      const radio = document.getElementById("choice-" + side);
      radio.checked = true;
      radio.focus();
    } else if (event.key === "Enter" && !event.target.closest("button, a, summary")) {
      // Buttons, links and the instructions toggle keep their own Enter.
      event.preventDefault();
      form.requestSubmit();
    }
  });
})();
