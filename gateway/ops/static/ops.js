// The dashboard's only script: the rate chart (uPlot) fed from the panels' series, and small live touches.
(function () {
  "use strict";
  var PALETTE = ["#2458d6", "#1f8a4c", "#8c5ad8", "#d17a00", "#0f8b8d", "#6b7483", "#b0418f", "#3f7f1f"];
  var chart = null, chartKeys = "";

  function seriesData() {
    var node = document.getElementById("series-data");
    return node ? JSON.parse(node.textContent) : null;
  }

  function draw() {
    var box = document.getElementById("rate-chart"), data = seriesData();
    if (!box || !data || typeof uPlot === "undefined") return;
    var names = Object.keys(data.lines), keys = names.join("|");
    var columns = [data.t].concat(names.map(function (n) { return data.lines[n]; }));
    if (chart && keys === chartKeys) { chart.setData(columns); return; }
    if (chart) chart.destroy();
    chartKeys = keys;
    var series = [{}].concat(names.map(function (name, i) {
      // the server's failures in red; the caller's errors (invalid arguments, missing inputs) in grey: not failures
      var failed = name === "failures", callers = name === "caller errors";
      return { label: name, stroke: failed ? "#c62f2f" : callers ? "#9aa1ad" : PALETTE[i % PALETTE.length],
               width: failed ? 2 : 1.6, points: { show: false }, fill: failed ? "rgba(198,47,47,0.08)" : undefined,
               dash: failed ? [4, 3] : callers ? [1, 3] : undefined,
               value: function (u, v) { return v == null ? "–" : v.toFixed(2) + "/s"; } };
    }));
    chart = new uPlot({
      width: box.clientWidth, height: 200, series: series, legend: { live: false },
      scales: { x: { time: true } },
      axes: [{ stroke: "#6b7483", grid: { stroke: "#eef0f3" } },
             { stroke: "#6b7483", grid: { stroke: "#eef0f3" }, size: 50, values: function (u, vals) { return vals.map(function (v) { return v + "/s"; }); } }]
    }, columns, box);
  }

  function trimTail() {
    var body = document.getElementById("tail");
    if (!body) return;
    while (body.rows.length > 200) body.deleteRow(body.rows.length - 1);
  }

  function setLive(on) {
    var node = document.getElementById("live-state");
    if (!node) return;
    node.className = "live " + (on ? "on" : "off");
    node.textContent = on ? "live" : "reconnecting…";
  }

  document.addEventListener("DOMContentLoaded", draw);
  window.addEventListener("resize", function () { if (chart) { chart.setSize({ width: document.getElementById("rate-chart").clientWidth, height: 200 }); } });
  document.body.addEventListener("htmx:afterSettle", function (e) {
    if (e.target && e.target.id === "panels") draw();
  });
  document.body.addEventListener("htmx:sseMessage", function (e) {
    setLive(true);
    if (e.detail && e.detail.type === "tail") {
      trimTail();
      var first = document.getElementById("tail").rows[0];
      if (first) first.classList.add("fresh");
    }
  });
  document.body.addEventListener("htmx:sseOpen", function () { setLive(true); });
  document.body.addEventListener("htmx:sseError", function () { setLive(false); });
})();
