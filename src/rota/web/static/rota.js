// rota dashboard: confirmation prompts, the job page's live output and the
// live overview chart.
// Hand-written, no dependencies. The chart arithmetic mirrors rota/web/_chart.py.
(function () {
  "use strict";

  document.addEventListener("submit", function (event) {
    var message = event.target.getAttribute("data-confirm");
    if (message && !window.confirm(message)) {
      event.preventDefault();
    }
  });

  // The job page's output panel: while the job runs, ask for the lines after
  // the last one shown every second, until the job has ended. The status line
  // keeps what the page said (a job not started says when it is due) until
  // output arrives.
  var jobLog = document.getElementById("job-log");
  if (jobLog && jobLog.getAttribute("data-follow") === "yes") {
    var logStatus = document.getElementById("job-log-status");
    var logSaid = logStatus.innerHTML;
    var logLast = Number(jobLog.getAttribute("data-last")) || 0;
    // the attempt whose heading new output continues (none: the next chunk
    // needs one), and what heads the attempts of the latest run: after a
    // retry by hand, ", after requeue by NAME at TIME"
    var logAttempt = jobLog.getAttribute("data-attempt");
    logAttempt = logAttempt ? Number(logAttempt) : null;
    var logNote = jobLog.getAttribute("data-note") || "";
    var logUrl = "/api/jobs/" + encodeURIComponent(jobLog.getAttribute("data-job")) + "/logs";
    var appendLog = function (cls, text) {
      var span = document.createElement("span");
      span.className = cls;
      span.textContent = text;
      jobLog.appendChild(span);
    };
    jobLog.scrollTop = jobLog.scrollHeight;  // following: the latest lines in view
    var followLog = function () {
      fetch(logUrl + "?after=" + logLast, {credentials: "same-origin"})
        .then(function (answer) {
          if (!answer.ok) {
            throw new Error("HTTP " + answer.status);
          }
          return answer.json();
        })
        .then(function (body) {
          var atEnd = jobLog.scrollTop + jobLog.clientHeight >= jobLog.scrollHeight - 4;
          body.chunks.forEach(function (c) {
            if (c.attempt !== logAttempt) {
              appendLog("joblog-attempt", "--- attempt " + c.attempt + logNote + " ---\n");
              logAttempt = c.attempt;
            }
            appendLog("joblog-" + c.stream, c.data);
          });
          logLast = body.last;
          if (atEnd) {
            jobLog.scrollTop = jobLog.scrollHeight;
          }
          if (body.ended) {  // the rest of the page shows the job as it was
            logStatus.textContent = "The job has ended: ";
            var outcome = document.createElement("a");
            outcome.href = window.location.pathname;
            outcome.textContent = "reload for its outcome";
            logStatus.appendChild(outcome);
            logStatus.appendChild(document.createTextNode("."));
          } else {
            if (body.chunks.length) {
              logSaid = "Following while the job runs.";
            }
            if (logStatus.innerHTML !== logSaid) {  // (after a pause, say it again)
              logStatus.innerHTML = logSaid;
            }
            window.setTimeout(followLog, 1000);
          }
        })
        .catch(function (err) {
          logStatus.textContent = "Following paused (" + err.message + "); retrying.";
          window.setTimeout(followLog, 5000);
        });
    };
    window.setTimeout(followLog, 1000);
  }

  var chart = document.getElementById("chart");
  if (!chart) {
    return;
  }
  var SVG = "http://www.w3.org/2000/svg";
  var WIDTH = 600, HEIGHT = 160, TOP = 12, LEFT = 40, BOTTOM = 22;
  var BAR = Number(chart.getAttribute("data-bar")) || 8;
  // minutes a bar counts, and between two time labels; which series of the answer
  var MINUTES = Number(chart.getAttribute("data-minutes")) || 1;
  var LABEL_EVERY = Number(chart.getAttribute("data-label-every")) || 10;
  var KEY = chart.getAttribute("data-key") || "chart";
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

  function countTicks(scale) {
    var parts = [5, 2, 1].filter(function (n) { return scale % n === 0; })[0];
    var ticks = [];
    for (var i = 0; i <= parts; i++) {
      ticks.push(scale * i / parts);
    }
    return ticks;
  }

  function node(name, attrs, text) {
    var el = document.createElementNS(SVG, name);
    Object.keys(attrs).forEach(function (key) { el.setAttribute(key, attrs[key]); });
    if (text != null) {
      el.textContent = text;
    }
    return el;
  }

  function rect(cls, x, y, h) {
    return node("rect", {
      "class": cls, x: x, y: y.toFixed(2), width: BAR, height: h.toFixed(2)
    });
  }

  function pad(n) {
    return (n < 10 ? "0" : "") + n;
  }

  function hhmm(minute) {
    var when = new Date(minute * 60000);
    return pad(when.getUTCHours()) + ":" + pad(when.getUTCMinutes());
  }

  function replaceGroup(id, group) {
    group.setAttribute("id", id);
    var old = document.getElementById(id);
    old.parentNode.replaceChild(group, old);
  }

  function drawChart(points) {
    var most = 0, succeeded = 0, failed = 0;
    points.forEach(function (p) {
      most = Math.max(most, p.succeeded + p.failed_attempts);
      succeeded += p.succeeded;
      failed += p.failed_attempts;
    });
    var scale = niceMax(most);
    var plot = HEIGHT - TOP;
    var bars = document.createElementNS(SVG, "g");
    var times = document.createElementNS(SVG, "g");
    var slot = WIDTH / Math.max(points.length, 1);
    points.forEach(function (p, i) {
      var okH = plot * p.succeeded / scale, failH = plot * p.failed_attempts / scale;
      var okY = HEIGHT - okH;
      var x = Math.round((LEFT + i * slot + (slot - BAR) / 2) * 100) / 100;
      var span = MINUTES === 1 ? hhmm(p.minute) : hhmm(p.minute) + "-" + hhmm(p.minute + MINUTES);
      var g = document.createElementNS(SVG, "g");
      g.appendChild(node("title", {}, span + " UTC: " + p.succeeded +
        " succeeded, " + p.failed_attempts +
        (p.failed_attempts === 1 ? " failed attempt" : " failed attempts")));
      g.appendChild(rect("ok", x, okY, okH));
      g.appendChild(rect("fail", x, okY - failH, failH));
      bars.appendChild(g);
      if (p.minute % LABEL_EVERY === 0) {
        var at = x + BAR / 2, tick = node("g", { "class": "tick" });
        tick.appendChild(node("line", { x1: at, y1: HEIGHT, x2: at, y2: HEIGHT + 4 }));
        tick.appendChild(node("text", {
          x: at, y: HEIGHT + BOTTOM - 4, "text-anchor": "middle"
        }, hhmm(p.minute)));
        times.appendChild(tick);
      }
    });
    var counts = document.createElementNS(SVG, "g");
    countTicks(scale).forEach(function (n) {
      var y = (HEIGHT - plot * n / scale).toFixed(2), tick = node("g", { "class": "tick" });
      tick.appendChild(node("line", {
        "class": "grid", x1: LEFT, y1: y, x2: LEFT + WIDTH, y2: y
      }));
      tick.appendChild(node("text", {
        x: LEFT - 4, y: y, "text-anchor": "end", "dominant-baseline": "middle"
      }, String(n)));
      counts.appendChild(tick);
    });
    replaceGroup("chart-bars", bars);
    replaceGroup("time-ticks", times);
    replaceGroup("count-ticks", counts);
    document.getElementById("chart-scale").textContent = String(scale);
    document.getElementById("legend-succeeded").textContent = String(succeeded);
    document.getElementById("legend-failed").textContent = String(failed);
  }

  function lookup(data, path) {
    return path.split(".").reduce(function (value, key) {
      return value == null ? value : value[key];
    }, data);
  }

  function update(data) {
    drawChart(data[KEY]);
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
