// The review queue: tick every submission of the page, tick a range with Shift-click, and move
// and decide with the keyboard (j/k, x, a, r). Nothing here sends anything the page's own buttons
// do not; keys are ignored while the reviewer types in a text field.
(function () {
  "use strict";

  var cards = Array.prototype.slice.call(document.querySelectorAll("article.submission"));
  var boxes = Array.prototype.slice.call(document.querySelectorAll("input[type=checkbox][form=bulk-review]"));
  var selectAll = document.getElementById("select-all");
  var current = -1;
  var lastTicked = null;

  function syncSelectAll() {
    if (!selectAll) return;
    var ticked = boxes.filter(function (box) { return box.checked; }).length;
    selectAll.checked = boxes.length > 0 && ticked === boxes.length;
    selectAll.indeterminate = ticked > 0 && ticked < boxes.length;
  }

  if (selectAll) {
    selectAll.addEventListener("change", function () {
      boxes.forEach(function (box) { box.checked = selectAll.checked; });
      lastTicked = null;
    });
  }

  boxes.forEach(function (box, index) {
    box.addEventListener("click", function (event) {
      if (event.shiftKey && lastTicked !== null && lastTicked !== index) {
        var from = Math.min(lastTicked, index), to = Math.max(lastTicked, index);
        for (var i = from; i <= to; i++) boxes[i].checked = box.checked;
      }
      lastTicked = index;
      syncSelectAll();
    });
  });

  function focusCard(index) {
    if (!cards.length) return;
    current = Math.max(0, Math.min(cards.length - 1, index));
    cards.forEach(function (card, i) { card.classList.toggle("current", i === current); });
    cards[current].focus({ preventScroll: true });
    cards[current].scrollIntoView({ block: "nearest" });
  }

  function typing(target) {
    if (!target) return false;
    if (target.isContentEditable) return true;
    var tag = target.tagName;
    if (tag === "TEXTAREA" || tag === "SELECT") return true;
    if (tag === "INPUT") {
      var type = (target.type || "text").toLowerCase();
      return ["checkbox", "radio", "button", "submit", "reset"].indexOf(type) === -1;
    }
    return false;
  }

  cards.forEach(function (card, index) {
    card.addEventListener("focusin", function () {
      current = index;
      cards.forEach(function (other, i) { other.classList.toggle("current", i === current); });
    });
  });

  document.addEventListener("keydown", function (event) {
    if (event.ctrlKey || event.metaKey || event.altKey || event.defaultPrevented) return;
    if (typing(event.target)) return;
    var key = event.key;
    if (key === "j") { focusCard(current + 1); event.preventDefault(); return; }
    if (key === "k") { focusCard(current - 1); event.preventDefault(); return; }
    if (current < 0 || !cards[current]) return;
    var card = cards[current];
    if (key === "x") {
      var box = card.querySelector("input[type=checkbox][form=bulk-review]");
      if (box) { box.checked = !box.checked; lastTicked = boxes.indexOf(box); syncSelectAll(); event.preventDefault(); }
    } else if (key === "a") {
      var approve = card.querySelector("form.review-one button[value=approve]");
      if (approve) { event.preventDefault(); approve.form.requestSubmit(approve); }
    } else if (key === "r") {
      var feedback = card.querySelector("form.review-one textarea[name=feedback]");
      if (feedback) { event.preventDefault(); feedback.focus(); }
    }
  });
})();
