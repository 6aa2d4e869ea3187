// podgate timeline: zoom by time range (the inputs, or a drag across the
// picture; a double click shows it all) and, on a live page, the picture
// and the panel replaced as the server sends them. Every element placed
// in time carries data-t0 (and data-t1) in ms from the recording's start.
(function () {
  "use strict";
  var NS = "http://www.w3.org/2000/svg";
  var STEPS = [10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10000, 15000, 30000,
    60000, 120000, 300000, 600000, 900000, 1800000, 3600000];
  var zoom = null; // {from, to} in ms once the user picked a range

  function step(span, n) {
    for (var i = 0; i < STEPS.length; i++) {
      if (span <= STEPS[i] * n) { return STEPS[i]; }
    }
    return span / n;
  }
  function label(ms) {
    if (ms < 60000) { return "+" + Number((ms / 1000).toFixed(3)) + "s"; }
    var s = Math.floor(ms / 1000);
    return "+" + Math.floor(s / 60) + ":" + String(s % 60).padStart(2, "0");
  }
  function svg() { return document.getElementById("timeline"); }
  function num(el, name) { return parseFloat(el.getAttribute(name)); }

  // layout places every timed element for the range from–to (ms).
  function layout(from, to) {
    var s = svg();
    if (!s || !(to > from)) { return; }
    var x0 = num(s, "data-x0"), x1 = num(s, "data-x1"), k = (x1 - x0) / (to - from);
    var X = function (t) { return x0 + (t - from) * k; };
    s.querySelectorAll("[data-t0]").forEach(function (el) {
      var a = X(num(el, "data-t0"));
      if (el.hasAttribute("data-t1")) {
        var gap = el.classList.contains("bin") || el.classList.contains("bin-held") ? 0.3 : 0;
        el.setAttribute("x", a.toFixed(1));
        el.setAttribute("width", Math.max(X(num(el, "data-t1")) - a - gap, 0.5).toFixed(1));
      } else if (el.tagName.toLowerCase() === "line") {
        el.setAttribute("x1", a.toFixed(1));
        el.setAttribute("x2", a.toFixed(1));
      } else {
        el.setAttribute("x", a.toFixed(1));
        el.setAttribute("text-anchor", a > x1 - 160 ? "end" : "start");
      }
    });
    axis(s, from, to, X);
    s.setAttribute("data-from", String(from));
    s.setAttribute("data-to", String(to));
    var f = document.getElementById("from"), t = document.getElementById("to");
    if (f && t) { f.value = (from / 1000).toFixed(1); t.value = (to / 1000).toFixed(1); }
  }

  function axis(s, from, to, X) {
    var g = s.querySelector("g.axis");
    if (!g) { return; }
    g.querySelectorAll(".axis-tick, .axis-label").forEach(function (el) { el.remove(); });
    var y = num(g, "data-y"), st = step(to - from, 10);
    for (var t = Math.ceil(from / st) * st; t <= to; t += st) {
      var x = X(t).toFixed(1);
      var tick = document.createElementNS(NS, "line");
      tick.setAttribute("class", "axis-tick");
      tick.setAttribute("x1", x); tick.setAttribute("x2", x);
      tick.setAttribute("y1", y); tick.setAttribute("y2", y + 5);
      var text = document.createElementNS(NS, "text");
      text.setAttribute("class", "axis-label");
      text.setAttribute("x", x); text.setAttribute("y", y + 17);
      text.textContent = label(t);
      g.appendChild(tick); g.appendChild(text);
    }
  }

  // whole is the recording's range: all of it, or what the page was
  // rendered with when that is narrower and the user has not zoomed.
  function whole() {
    var s = svg();
    return { from: 0, to: num(s, "data-end") };
  }
  function apply() {
    var s = svg();
    if (!s) { return; }
    if (zoom) { layout(zoom.from, zoom.to); return; }
    if (document.body.getAttribute("data-live")) { var w = whole(); layout(w.from, w.to); return; }
    layout(num(s, "data-from"), num(s, "data-to"));
  }
  function setZoom(from, to) {
    if (!(to > from)) { return; }
    zoom = { from: Math.max(from, 0), to: to };
    apply();
  }
  function reset() { zoom = null; var w = whole(); layout(w.from, w.to); }

  // Dragging across the picture zooms to what was dragged over.
  var drag = null;
  function svgX(s, evt) {
    var r = s.getBoundingClientRect();
    return (evt.clientX - r.left) * s.viewBox.baseVal.width / r.width;
  }
  function timeAt(s, x) {
    var x0 = num(s, "data-x0"), x1 = num(s, "data-x1"), from = num(s, "data-from"), to = num(s, "data-to");
    return from + (Math.min(Math.max(x, x0), x1) - x0) * (to - from) / (x1 - x0);
  }
  document.addEventListener("mousedown", function (evt) {
    var s = svg();
    if (!s || !s.contains(evt.target)) { return; }
    var x = svgX(s, evt);
    if (x < num(s, "data-x0")) { return; }
    var sel = document.createElementNS(NS, "rect");
    sel.setAttribute("class", "selection");
    sel.setAttribute("y", "0"); sel.setAttribute("height", s.viewBox.baseVal.height);
    sel.setAttribute("x", x); sel.setAttribute("width", "0");
    s.appendChild(sel);
    drag = { s: s, x: x, sel: sel };
    evt.preventDefault();
  });
  document.addEventListener("mousemove", function (evt) {
    if (!drag) { return; }
    var x = svgX(drag.s, evt);
    drag.sel.setAttribute("x", Math.min(x, drag.x));
    drag.sel.setAttribute("width", Math.abs(x - drag.x));
  });
  document.addEventListener("mouseup", function (evt) {
    if (!drag) { return; }
    var d = drag, x = svgX(d.s, evt);
    drag = null;
    d.sel.remove();
    if (Math.abs(x - d.x) > 3) { setZoom(timeAt(d.s, Math.min(x, d.x)), timeAt(d.s, Math.max(x, d.x))); }
  });
  document.addEventListener("dblclick", function (evt) {
    var s = svg();
    if (s && s.contains(evt.target)) { reset(); }
  });

  function controls() {
    var f = document.getElementById("from"), t = document.getElementById("to"), r = document.getElementById("reset");
    if (!f || !t) { return; }
    var onInput = function () { setZoom(parseFloat(f.value) * 1000, parseFloat(t.value) * 1000); };
    f.addEventListener("change", onInput);
    t.addEventListener("change", onInput);
    if (r) { r.addEventListener("click", reset); }
  }

  // A live page gets the picture and the panel from the server as they
  // change (Server-Sent Events).
  function live(url) {
    var status = document.getElementById("live-status");
    var es = new EventSource(url);
    es.addEventListener("render", function (evt) {
      var d = JSON.parse(evt.data);
      document.getElementById("view").innerHTML = d.svg;
      document.getElementById("panel").innerHTML = d.panel;
      document.getElementById("meta").textContent = d.meta;
      document.body.setAttribute("data-updates", String(1 + parseInt(document.body.getAttribute("data-updates") || "0", 10)));
      if (status) { status.textContent = "live"; status.className = "live-status"; }
      apply();
    });
    es.onerror = function () {
      if (status) { status.textContent = "disconnected: retrying"; status.className = "live-status stale"; }
    };
  }

  document.addEventListener("DOMContentLoaded", function () {
    controls();
    apply();
    var url = document.body.getAttribute("data-live");
    if (url) { live(url); }
  });
})();
