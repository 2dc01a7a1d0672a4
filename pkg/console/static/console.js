// msgx console: small enhancements over server-rendered pages; every page works without them.
// Loaded as a file under script-src 'self' (no inline script, no third party).
(function () {
  "use strict";

  // A header checkbox with data-select-all="<table id>" ticks every row of that table.
  document.querySelectorAll("input[data-select-all]").forEach(function (box) {
    box.addEventListener("change", function () {
      var table = document.getElementById(box.getAttribute("data-select-all"));
      if (!table) { return; }
      table.querySelectorAll("tbody input[type=checkbox]").forEach(function (c) { c.checked = box.checked; });
    });
  });

  // The element #live with data-live-every="<seconds>" is replaced, every that many seconds,
  // by #live of the same page fetched again; the Pause button stops and resumes it.
  var live = document.getElementById("live");
  if (!live) { return; }
  var every = parseInt(live.getAttribute("data-live-every"), 10) || 10;
  var paused = false;
  var timer = null;
  function bindPause() {
    var b = document.getElementById("live-pause");
    if (!b) { return; }
    b.textContent = paused ? "Resume" : "Pause";
    b.setAttribute("aria-pressed", paused ? "true" : "false");
    b.addEventListener("click", function () {
      paused = !paused;
      bindPause();
      schedule();
    });
  }
  function schedule() {
    if (timer) { clearTimeout(timer); timer = null; }
    if (!paused) { timer = setTimeout(update, every * 1000); }
  }
  function update() {
    fetch(window.location.href, { credentials: "same-origin", headers: { "Accept": "text/html" } })
      .then(function (resp) {
        if (!resp.ok || resp.redirected) { throw new Error("status " + resp.status); }
        return resp.text();
      })
      .then(function (html) {
        var next = new DOMParser().parseFromString(html, "text/html").getElementById("live");
        if (next && !paused) {
          live.replaceWith(next);
          live = next;
          bindPause();
        }
      })
      .catch(function () { /* keep the last view; try again at the next tick */ })
      .then(schedule);
  }
  bindPause();
  schedule();
})();
