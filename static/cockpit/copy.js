// Buttons with data-copy="text" copy the text (an id, or the ids of a page) and say so to screen readers.
(() => {
  const status = document.getElementById("copy-status");
  const say = (text) => { if (status) status.textContent = text; };
  const fallback = (text) => {
    const area = document.createElement("textarea");
    area.value = text;
    area.setAttribute("readonly", "");
    area.style.position = "absolute";
    area.style.left = "-9999px";
    document.body.appendChild(area);
    area.select();
    let done = false;
    try { done = document.execCommand("copy"); } catch (error) { done = false; }
    area.remove();
    return done;
  };
  document.addEventListener("click", async (event) => {
    const button = event.target.closest("button[data-copy]");
    if (!button) return;
    const text = button.dataset.copy;
    let done = false;
    try {
      await navigator.clipboard.writeText(text);
      done = true;
    } catch (error) {
      done = fallback(text);
    }
    button.dataset.copied = done ? "yes" : "no";
    const words = status ? status.dataset : {};
    say(`${done ? (words.done || "Copied") : (words.failed || "Could not copy")}: ${text}`);
  });
})();
