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
  // by #live of the same page fetched again (each fetch given that long before it is aborted);
  // the Pause button stops and resumes it. The verdict says how old it is (#verdict-age) and,
  // once no fetch has answered for data-unknown-after seconds (a console frozen, stopped or cut
  // off, a database that does not answer), turns "unknown" instead of showing an old verdict as
  // the current one. A session that ended says so and stops the updates.
  var live = document.getElementById("live");
  if (!live) { return; }
  var every = parseInt(live.getAttribute("data-live-every"), 10) || 10;
  var unknownAfter = parseInt(live.getAttribute("data-unknown-after"), 10) || 3 * every;
  var paused = false;
  var timer = null;
  var shownAt = Date.now(); // when the view shown was read from the console
  var problem = "";         // why the last update failed
  var ended = false;        // the session ended: no more updates
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
    if (!paused && !ended) { timer = setTimeout(update, every * 1000); }
  }
  // unknown replaces the verdict with "unknown" and why; the figures below stay, marked stale.
  function unknown(why) {
    var v = document.getElementById("verdict");
    if (!v) { return; }
    v.className = "verdict unknown";
    document.getElementById("verdict-state").textContent = "unknown";
    var list = document.getElementById("verdict-reasons");
    if (!list) {
      list = document.createElement("ul");
      list.id = "verdict-reasons";
      v.querySelectorAll("p").forEach(function (p) { p.remove(); });
      v.appendChild(list);
    }
    list.replaceChildren(document.createElement("li"));
    list.firstChild.textContent = why;
    live.classList.add("stale");
  }
  function tick() {
    var age = Math.floor((Date.now() - shownAt) / 1000);
    var a = document.getElementById("verdict-age");
    if (a) { a.textContent = age + " s"; }
    if (ended) { return; }
    if (age >= unknownAfter) {
      unknown("unknown: the console cannot reach its data: no answer for " + age + " s" +
        (paused ? " (updates paused)" : problem ? " (" + problem + ")" : ""));
    }
  }
  function sessionEnded() {
    ended = true;
    unknown("unknown: your session has ended (expired, logged out or its token removed): log in again to see the pipeline.");
    var li = document.querySelector("#verdict-reasons li");
    var a = document.createElement("a");
    a.href = "/login?next=" + encodeURIComponent(window.location.pathname + window.location.search);
    a.textContent = " Log in";
    li.appendChild(a);
  }
  function update() {
    var abort = new AbortController();
    var limit = setTimeout(function () { abort.abort(); }, every * 1000);
    fetch(window.location.href, { credentials: "same-origin", headers: { "Accept": "text/html" }, signal: abort.signal })
      .then(function (resp) {
        if (resp.status === 401 || (resp.redirected && new URL(resp.url).pathname === "/login")) {
          throw new Error("session ended");
        }
        if (!resp.ok) { throw new Error("HTTP " + resp.status); }
        return resp.text();
      })
      .then(function (html) {
        var next = new DOMParser().parseFromString(html, "text/html").getElementById("live");
        if (!next) { throw new Error("no pipeline in the answer"); }
        if (!paused) {
          live.replaceWith(next);
          live = next;
          shownAt = Date.now();
          problem = "";
          bindPause();
          tick();
        }
      })
      .catch(function (err) {
        if (err.message === "session ended") { sessionEnded(); return; }
        problem = err.name === "AbortError" ? "no answer within " + every + " s" : err.message;
        tick();
      })
      .then(function () { clearTimeout(limit); schedule(); });
  }
  bindPause();
  schedule();
  setInterval(tick, 1000);
})();
