// The Gantt beside the graph (the Graph | Gantt toggle): one row per step on the run's clock, each attempt a piece
// of its own with a marker where the next begins, the wait before a start drawn lighter, a running attempt
// growing to the "now" line, a step not started as an outline at the now line. Only the rows in view
// are drawn (a thousand-step run scrolls as quickly as a ten-step one). Drawn from forgeAttempts (run_attempts.js).
(function () {
  "use strict";
  const card = document.getElementById("gantt-card");
  const box = document.getElementById("gantt");
  if (!card || !box) return;
  const SVG = "http://www.w3.org/2000/svg";
  const ROW = 22, AXIS = 22, PAD = 12;
  let labelWidth = 170; // narrower on a phone
  const graphCard = document.querySelector(".graph-card");
  const buttons = document.querySelectorAll("[data-view]");
  const rows = document.createElement("div"); // as tall as every row: the scroll bar is the run's
  rows.className = "gantt-rows";
  const axis = document.createElementNS(SVG, "svg");
  axis.classList.add("gantt-axis");
  const svg = document.createElementNS(SVG, "svg");
  svg.classList.add("gantt-svg");
  rows.append(svg);
  box.append(axis, rows);
  let frame = 0;
  let selected = null;

  const el = (name, attrs, parent) => {
    const node = document.createElementNS(SVG, name);
    for (const [k, v] of Object.entries(attrs)) node.setAttribute(k, v);
    if (parent) parent.append(node);
    return node;
  };
  const titled = (node, text) => { el("title", {}, node).textContent = text; return node; };
  const secs = (ms) => (ms < 10000 ? (ms / 1000).toFixed(2) : Math.round(ms / 1000)) + " s";

  function show(view) {
    const gantt = view === "gantt";
    card.hidden = !gantt;
    if (graphCard) graphCard.hidden = gantt;
    buttons.forEach((b) => b.setAttribute("aria-pressed", String(b.dataset.view === view)));
    const run = window.forgeRun;
    const cy = run && run.cy;
    if (gantt) {
      hiddenAt = performance.now();
      kept = cy ? { zoom: cy.zoom(), pan: { ...cy.pan() } } : null;
      schedule();
      return;
    }
    if (!cy) return;
    cy.resize();
    // laid out while its card had no size: fit it now, as its Fit button does; else as the person left it
    if (run.laidOutAt !== null && run.laidOutAt > hiddenAt) document.querySelector("[data-graph=fit]")?.click();
    else if (kept) cy.viewport(kept);
  }
  let kept = null;
  let hiddenAt = Infinity;
  buttons.forEach((b) => b.addEventListener("click", () => show(b.dataset.view)));

  function span(model) {
    const now = model.now();
    let start = model.start || now, end = model.end || now;
    model.steps.forEach((s) => {
      const first = s.waits[0] || s.attempts[0];
      if (first && first.start < start) start = first.start;
    });
    if (!model.end) end = Math.max(end, now);
    return { start, end: Math.max(end, start + 1000), now };
  }

  function ticks(ms) {
    const steps = [1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 21600, 43200, 86400];
    const every = (steps.find((s) => ms / 1000 / s <= 8) || 86400) * 1000;
    const out = [];
    for (let t = 0; t <= ms; t += every) out.push(t);
    return out;
  }
  const tickText = (ms) => (ms < 60000 ? ms / 1000 + " s" : ms < 3600000 ? ms / 60000 + " min" : ms / 3600000 + " h");

  function draw() {
    frame = 0;
    const model = window.forgeAttempts;
    if (card.hidden || !model || !model.ready) return;
    labelWidth = box.clientWidth < 560 ? 96 : 170;
    const width = Math.max(box.clientWidth - 2, labelWidth + 100);
    const { start, end, now } = span(model);
    const x = (t) => labelWidth + ((t - start) / (end - start)) * (width - labelWidth - PAD);
    const total = model.order.length;
    rows.style.height = total * ROW + "px";
    const first = Math.max(0, Math.floor(box.scrollTop / ROW) - 5);
    const count = Math.ceil(box.clientHeight / ROW) + 10;
    const last = Math.min(total, first + count);
    const live = !model.end;
    // The axis: ticks on the run's clock, and now.
    axis.replaceChildren();
    axis.setAttribute("width", width); axis.setAttribute("height", AXIS);
    for (const t of ticks(end - start)) {
      el("line", { x1: x(start + t), x2: x(start + t), y1: AXIS - 6, y2: AXIS, class: "tick" }, axis);
      el("text", { x: x(start + t) + 2, y: AXIS - 8, class: "tick-text" }, axis).textContent = tickText(t);
    }
    el("text", { x: 4, y: AXIS - 8, class: "tick-text" }, axis).textContent = live ? "running for " + secs(now - start) : "took " + secs(end - start);
    // The rows in view.
    svg.replaceChildren();
    svg.setAttribute("width", width);
    svg.setAttribute("height", (last - first) * ROW);
    svg.style.top = first * ROW + "px";
    for (let i = first; i < last; i++) {
      const s = model.steps.get(model.order[i]);
      const y = (i - first) * ROW;
      const g = el("g", { class: "gantt-row" + (s.id === selected ? " selected" : ""), "data-step": s.id }, svg);
      el("rect", { x: 0, y, width, height: ROW, class: i % 2 ? "stripe odd" : "stripe" }, g);
      titled(el("text", { x: 4, y: y + ROW - 7, class: "label" }, g), s.id).append(s.id.length > labelWidth / 7.5 ? s.id.slice(0, Math.floor(labelWidth / 7.5) - 1) + "…" : s.id);
      for (const w of s.waits) {
        const to = w.end === null ? now : w.end;
        titled(el("rect", { x: x(w.start), y: y + 7, width: Math.max(1, x(to) - x(w.start)), height: ROW - 14,
                            class: "wait wait-" + w.kind, "data-wait": w.kind }, g),
               w.kind + (w.end === null ? " so far: " : ": ") + secs(to - w.start));
      }
      s.attempts.forEach((a, k) => {
        const to = a.end === null ? now : a.end;
        titled(el("rect", { x: x(a.start), y: y + 4, width: Math.max(2, x(to) - x(a.start)), height: ROW - 8,
                            class: "piece status-" + a.status, "data-attempt": a.n }, g),
               "attempt " + a.n + ": " + a.status + ", " + secs(to - a.start));
        if (k > 0) el("line", { x1: x(a.start), x2: x(a.start), y1: y + 1, y2: y + ROW - 1, class: "marker" }, g);
      });
      if (!s.attempts.length && !s.waits.length) { // at the earliest it starts now; in an ended run, never
        const at = x(live ? now : end);
        titled(el("rect", { x: at - 16, y: y + 5, width: 16, height: ROW - 10, class: "outline", "data-outline": "true" }, g),
               s.id + ": " + (s.neverRan ? s.word : live ? "not started" : "never started"));
      }
    }
    if (live) el("line", { x1: x(now), x2: x(now), y1: 0, y2: (last - first) * ROW, class: "now-line" }, svg);
    box.dataset.drawn = String(Date.now());
  }

  function schedule() { if (!frame) frame = requestAnimationFrame(draw); }
  document.addEventListener("forge:attempts", schedule);
  document.addEventListener("forge:select", (e) => { selected = e.detail.step; schedule(); });
  box.addEventListener("scroll", schedule, { passive: true });
  window.addEventListener("resize", schedule);
  svg.addEventListener("click", (e) => {
    const row = e.target.closest("[data-step]");
    if (row && window.forgeRun && window.forgeRun.select) window.forgeRun.select(row.dataset.step);
  });
  setInterval(() => { const m = window.forgeAttempts; if (m && m.ready && !m.end) schedule(); }, 1000); // now moves
})();
