// rota dashboard: confirmation prompts and the live overview chart.
// Hand-written, no dependencies. The chart arithmetic mirrors rota/web/_chart.py.
(function () {
  "use strict";

  document.addEventListener("submit", function (event) {
    var message = event.target.getAttribute("data-confirm");
    if (message && !window.confirm(message)) {
      event.preventDefault();
    }
  });

  var chart = document.getElementById("chart");
  if (!chart) {
    return;
  }
  var SVG = "http://www.w3.org/2000/svg";
  var WIDTH = 600, HEIGHT = 160, TOP = 12, SLOT = 10;
  var BAR = Number(chart.getAttribute("data-bar")) || 8;
  var status = document.getElementById("live-status");

  function niceMax(value) {
    for (var step = 1; ; step *= 10) {
      var ms = [1, 2, 5];
      for (var i = 0; i < ms.length; i++) {
        if (ms[i] * step >= value) {
          return ms[i] * step;
        }
      }
    }
  }

  function rect(cls, x, y, h) {
    var r = document.createElementNS(SVG, "rect");
    r.setAttribute("class", cls);
    r.setAttribute("x", x);
    r.setAttribute("y", y.toFixed(2));
    r.setAttribute("width", BAR);
    r.setAttribute("height", h.toFixed(2));
    return r;
  }

  function pad(n) {
    return (n < 10 ? "0" : "") + n;
  }

  function drawChart(points) {
    var most = 0;
    points.forEach(function (p) { most = Math.max(most, p.succeeded + p.failed); });
    var scale = niceMax(most);
    var plot = HEIGHT - TOP;
    var group = document.createElementNS(SVG, "g");
    group.setAttribute("id", "chart-bars");
    points.forEach(function (p, i) {
      var okH = plot * p.succeeded / scale, failH = plot * p.failed / scale;
      var okY = HEIGHT - okH, x = i * SLOT + 1;
      var when = new Date(p.minute * 60000);
      var g = document.createElementNS(SVG, "g");
      var title = document.createElementNS(SVG, "title");
      title.textContent = pad(when.getUTCHours()) + ":" + pad(when.getUTCMinutes()) + " UTC: " +
        p.succeeded + " succeeded, " + p.failed + " failed";
      g.appendChild(title);
      g.appendChild(rect("ok", x, okY, okH));
      g.appendChild(rect("fail", x, okY - failH, failH));
      group.appendChild(g);
    });
    chart.replaceChild(group, document.getElementById("chart-bars"));
    document.getElementById("chart-scale").textContent = String(scale);
  }

  function lookup(data, path) {
    return path.split(".").reduce(function (value, key) {
      return value == null ? value : value[key];
    }, data);
  }

  function update(data) {
    drawChart(data.chart);
    document.querySelectorAll("[data-live]").forEach(function (el) {
      var value = lookup(data, el.getAttribute("data-live"));
      if (value != null) {
        el.textContent = String(value);
      }
    });
    if (status) {
      status.textContent = "";
    }
  }

  function poll() {
    fetch(chart.getAttribute("data-src"), {
      credentials: "same-origin",
      headers: { "Accept": "application/json" }
    }).then(function (response) {
      if (!response.ok) {
        throw new Error("HTTP " + response.status);
      }
      return response.json();
    }).then(update).catch(function (error) {
      if (status) {
        status.textContent = "(live updates paused: " + error.message + ")";
      }
    }).then(function () {
      window.setTimeout(poll, 2000);
    });
  }

  window.setTimeout(poll, 2000);
})();
