// Instruction generation page, multi-image family: add and remove numbered image rows.
(function () {
  "use strict";

  const task = window.crowdbenchTask;
  if (!task) return;
  const say = task.say;

  const imageRows = document.getElementById("image-rows");
  if (!imageRows) return;
  // Fields are named images-<n>-url, images-<n>-file, …; rows are renumbered 0, 1, … after each change.
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
})();
