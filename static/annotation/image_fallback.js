// An image of the task that fails to load becomes a clear placeholder: a message, the image's link,
// and a "Report this image" button that records the report on the server. Text is only ever set as
// text (textContent), never as HTML.
(function () {
  "use strict";
  const config = document.getElementById("image-report");
  if (!config) return;

  function headers() {
    const result = { "Content-Type": "application/json", "Accept": "application/json" };
    if (config.dataset.taskToken) {
      result["X-Task-Token"] = config.dataset.taskToken;
    } else {
      const csrf = document.querySelector("input[name=csrfmiddlewaretoken]");
      if (csrf) result["X-CSRFToken"] = csrf.value;
    }
    return result;
  }

  async function report(address, button, status) {
    button.disabled = true;
    status.textContent = config.dataset.msgSending;
    try {
      const response = await fetch(config.dataset.url, {
        method: "POST", credentials: "same-origin", headers: headers(),
        body: JSON.stringify({ image_url: address }),
      });
      if (response.ok) {
        status.textContent = config.dataset.msgReported;
        return;
      }
      let detail = "";
      try { detail = (await response.json()).detail || ""; } catch (error) { detail = ""; }
      status.textContent = detail ? config.dataset.msgFailed + " " + detail : config.dataset.msgFailed;
    } catch (error) {
      status.textContent = config.dataset.msgFailed;
    }
    button.disabled = false;
  }

  function replace(image) {
    if (image.dataset.broken) return;
    image.dataset.broken = "true";
    const address = image.getAttribute("src") || "";
    const box = document.createElement("div");
    box.className = "image-placeholder";
    box.setAttribute("role", "group");
    const message = document.createElement("p");
    message.className = "image-placeholder-message";
    message.textContent = config.dataset.msgBroken;
    box.appendChild(message);
    const link = document.createElement("a");
    link.className = "image-placeholder-link";
    // Only web addresses become links (an address is shown as text whatever it is).
    if (/^(https?:\/\/|\/)/i.test(address)) link.href = address;
    link.target = "_blank";
    link.rel = "noopener noreferrer";
    link.textContent = address || config.dataset.msgOpen;
    link.title = config.dataset.msgOpen;
    box.appendChild(link);
    if (!config.dataset.url) {  // a preview: nothing to report against yet
      image.hidden = true;
      image.style.display = "none";
      image.insertAdjacentElement("afterend", box);
      return;
    }
    const button = document.createElement("button");
    button.type = "button";
    button.className = "secondary image-report-button";
    button.textContent = config.dataset.msgReport;
    const status = document.createElement("p");
    status.className = "image-report-status";
    status.setAttribute("role", "status");
    status.setAttribute("aria-live", "polite");
    button.addEventListener("click", function () { report(address, button, status); });
    box.appendChild(button);
    box.appendChild(status);
    image.hidden = true;
    image.style.display = "none";  // page styles may set display on images, which [hidden] alone loses to
    image.insertAdjacentElement("afterend", box);
  }

  function watch(image) {
    image.addEventListener("error", function () { replace(image); });
    if (image.complete && image.naturalWidth === 0 && image.getAttribute("src")) replace(image);
  }

  document.querySelectorAll("main img").forEach(watch);
})();
