// Worker task pages: timer, keyboard shortcuts, ranking reordering and submission to the API.
// Worker-written text is only ever read or moved as DOM nodes, never written as HTML.
(function () {
  "use strict";

  const form = document.getElementById("task-form");
  if (!form) return;
  const statusLine = document.getElementById("task-status");
  const submitButton = document.getElementById("submit-button");
  const taskType = form.dataset.taskType;

  function say(message) {
    statusLine.textContent = message;
  }

  // --- timer ---
  const timer = document.getElementById("task-timer");
  if (timer) {
    const deadline = Date.now() + Number(timer.dataset.secondsLeft) * 1000;
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
    const handle = setInterval(tick, 1000);
    tick();
  }

  function typingInField(target) {
    return target && (target.tagName === "TEXTAREA" || target.tagName === "SELECT" ||
      (target.tagName === "INPUT" && !["radio", "checkbox"].includes(target.type)));
  }

  // --- pairwise: 1/← left, 2/→ right, Enter submits ---
  if (taskType === "pairwise") {
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
  }

  // --- ranking: drag and drop, buttons, ↑/↓ on a focused review ---
  if (taskType === "ranking") {
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
  }

  // --- instruction generation, multi-image family: add and remove numbered image rows ---
  // Fields are named images-<n>-url, images-<n>-file, …; rows are renumbered 0, 1, … after each change.
  const imageRows = document.getElementById("image-rows");
  if (taskType === "instruction_generation" && imageRows) {
    const rowTemplate = document.getElementById("image-row-template");
    const addButton = document.getElementById("add-image");
    const fewest = Number(imageRows.dataset.minImages);
    const most = Number(imageRows.dataset.maxImages);
    const renumber = function () {
      const rows = Array.from(imageRows.children);
      rows.forEach(function (row, index) {
        row.querySelectorAll("[name], [id], [for]").forEach(function (element) {
          ["name", "id", "for"].forEach(function (attribute) {
            const value = element.getAttribute(attribute);
            if (value) {
              element.setAttribute(attribute, value.replace(/^images-(\d+|__prefix__)-/, "images-" + index + "-"));
            }
          });
        });
        const number = String(index + 1);
        const title = row.querySelector(".image-row-title");
        title.textContent = title.dataset.title.replace("__number__", number);
        const remove = row.querySelector(".remove-image");
        remove.textContent = remove.dataset.label.replace("__number__", number);
        remove.disabled = rows.length <= fewest;
      });
      addButton.disabled = rows.length >= most;
    };
    const addRow = function () {
      const row = rowTemplate.content.firstElementChild.cloneNode(true);
      imageRows.appendChild(row);
      renumber();
      return row;
    };
    for (let count = 0; count < fewest; count += 1) addRow();
    addButton.addEventListener("click", function () {
      if (imageRows.children.length >= most) return;
      addRow().querySelector("input").focus();
    });
    imageRows.addEventListener("click", function (event) {
      const button = event.target.closest(".remove-image");
      if (!button || imageRows.children.length <= fewest) return;
      button.closest(".image-row").remove();
      renumber();
      say(imageRows.dataset.msgRemoved);
      addButton.focus();
    });
  }

  // --- skip: give the task back so another worker gets it ---
  const skipButton = document.getElementById("skip-button");
  if (skipButton) {
    skipButton.addEventListener("click", async function () {
      if (!window.confirm(form.dataset.msgSkipConfirm)) return;
      const token = form.querySelector("input[name=csrfmiddlewaretoken]").value;
      try {
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

  // --- submit through the API; the server stores a repeated submission once ---
  let sending = false;
  form.addEventListener("submit", async function (event) {
    event.preventDefault();
    if (sending) return;
    sending = true;
    submitButton.disabled = true;
    say(form.dataset.msgSending);
    const token = form.querySelector("input[name=csrfmiddlewaretoken]").value;
    try {
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

  // Marks the page interactive (keyboard handlers attached); tests and styles can wait for it.
  form.dataset.ready = "true";
})();
