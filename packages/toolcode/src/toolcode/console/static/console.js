// The console's only script: new paused runs appear in the list as they pause (server-sent events),
// decided or expired ones leave it. Values are set as text, never as HTML.
"use strict";
(function () {
  var list = document.getElementById("runs");
  if (list) {
    var events = new EventSource(list.dataset.events);
    events.addEventListener("pause", function (ev) {
      var run = JSON.parse(ev.data);
      if (document.getElementById("run-" + run.id)) return;
      var empty = list.querySelector("tr.empty");
      if (empty) empty.remove();
      var row = document.createElement("tr");
      row.id = "run-" + run.id;
      row.className = "arrived";
      var link = document.createElement("a");
      link.href = run.url;
      link.textContent = run.tools;
      var cells = [link, run.caller, run.paused, run.expires];
      cells.forEach(function (value) {
        var cell = document.createElement("td");
        if (typeof value === "string") cell.textContent = value; else cell.appendChild(value);
        row.appendChild(cell);
      });
      row.dataset.shownAt = String(Date.now());
      row.dataset.pausedAt = run.paused_at;
      list.insertBefore(row, list.firstChild);
    });
    events.addEventListener("gone", function (ev) {
      var row = document.getElementById("run-" + JSON.parse(ev.data).id);
      if (row) row.remove();
    });
  }
  var pending = document.getElementById("pending");
  if (pending) pending.scrollIntoView({ block: "center" });
})();
