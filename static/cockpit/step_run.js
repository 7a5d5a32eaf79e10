// A step run page reloads itself every two seconds while the run is queued or running.
(function () {
  var run = document.getElementById("step-run");
  if (run && run.dataset.active === "1") {
    window.setTimeout(function () { window.location.reload(); }, 2000);
  }
})();
