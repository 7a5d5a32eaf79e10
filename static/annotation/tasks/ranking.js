// Review ranking page: drag and drop, Up/Down buttons, ↑/↓ on a focused review; Enter submits.
// Review texts are moved as DOM nodes, never written as HTML.
(function () {
  "use strict";

  const task = window.crowdbenchTask;
  if (!task) return;
  const form = task.form;
  const say = task.say;

  const list = document.getElementById("ranking-list");
  const renumber = function () {
    Array.from(list.children).forEach(function (item, index) {
      item.querySelector(".rank-number").textContent = String(index + 1);
    });
  };
  const announce = function (item) {
    const position = Array.from(list.children).indexOf(item) + 1;
    say(form.dataset.msgMoved + " " + position);
  };
  const move = function (item, direction) {
    if (direction < 0 && item.previousElementSibling) {
      list.insertBefore(item, item.previousElementSibling);
    } else if (direction > 0 && item.nextElementSibling) {
      list.insertBefore(item.nextElementSibling, item);
    } else {
      return;
    }
    renumber();
    announce(item);
  };
  list.addEventListener("click", function (event) {
    const button = event.target.closest("button");
    if (!button) return;
    const item = button.closest(".ranking-item");
    move(item, button.classList.contains("move-up") ? -1 : 1);
    button.focus();
  });
  list.addEventListener("keydown", function (event) {
    const item = event.target;
    if (!item.classList || !item.classList.contains("ranking-item")) return;
    if (event.key === "ArrowUp" || event.key === "ArrowDown") {
      event.preventDefault();
      move(item, event.key === "ArrowUp" ? -1 : 1);
      item.focus();
    } else if (event.key === "Enter") {
      event.preventDefault();
      form.requestSubmit();
    }
  });
  let dragged = null;
  list.addEventListener("dragstart", function (event) {
    dragged = event.target.closest(".ranking-item");
    if (!dragged) return;
    dragged.classList.add("dragging");
    event.dataTransfer.effectAllowed = "move";
    event.dataTransfer.setData("text/plain", dragged.dataset.reviewId);
  });
  list.addEventListener("dragover", function (event) {
    if (!dragged) return;
    event.preventDefault();
    const over = event.target.closest(".ranking-item");
    if (!over || over === dragged) return;
    const box = over.getBoundingClientRect();
    const after = event.clientY > box.top + box.height / 2;
    list.insertBefore(dragged, after ? over.nextElementSibling : over);
  });
  list.addEventListener("drop", function (event) {
    event.preventDefault();
  });
  list.addEventListener("dragend", function () {
    if (!dragged) return;
    dragged.classList.remove("dragging");
    renumber();
    announce(dragged);
    dragged = null;
  });
})();
