// The live run view: applies the run's events from its websocket, in order, once each, batched per frame.
// The page was rendered with the last event id it shows; the socket replays what came after it.
(function () {
  "use strict";
  const data = JSON.parse(document.getElementById("run-data").textContent);
  const nodes = new Map(data.nodes.map((n) => [n.id, n]));
  const PER_FRAME = 50; // events applied in one frame: a burst is spread over frames, never one long task
  const rows = new Map([...document.querySelectorAll("tr[data-step]")].map((tr) => [tr.dataset.step, tr]));
  const badge = document.getElementById("live");
  const runStatus = document.getElementById("run-status");
  // applied/appliedAt: each event id the page applied and when (ms since the epoch), read by tests and the bench.
  const live = (window.forgeRun = { lastApplied: data.last_event_id, applied: [], appliedAt: [], runStatus: data.status,
                                    cy: null, drawnAt: null, laidOutAt: null, nodes, selected: null, select: null });
  // The page's other parts (status list, Gantt, run log, approval cards) follow the run through DOM events:
  // "forge:events" ({events}: each batch applied, in order) and "forge:select" ({step}: the step selected, or null);
  // "forge:snapshot" ({last_id, run: its status and error}) when a backlog too long to replay was replaced by the rows' state: read again.
  const tell = (name, detail) => document.dispatchEvent(new CustomEvent(name, { detail }));
  let queue = [];
  let frame = 0;
  let socket = null;
  let retry = 0;
  let lostAt = null;

  function showRun(status) {
    live.runStatus = status;
    setStatus(runStatus, status);
    if (status === "completed" || status === "failed" || status === "cancelled") {
      document.getElementById("cancel-form")?.remove();
      document.querySelectorAll(".restart[hidden]").forEach((cell) => { cell.hidden = false; });
    }
  }

  function setStatus(el, status) {
    el.textContent = status;
    el.className = "status status-" + status;
  }

  // What the server said of a step (its events and snapshots carry the status word and the why-not-running
  // sentence, forge/runs/sentences.py): the page shows it and writes no sentence of its own.
  const neverRan = (node) => node.status === "failed" && node.error_code === "upstream_failed";
  const classOf = (node) => (neverRan(node) ? "status-upstream-failed" : "status-" + node.status);
  const seconds = (node) => (node.started_at && node.finished_at
    ? ((Date.parse(node.finished_at) - Date.parse(node.started_at)) / 1000).toFixed(2) + " s" : "-");

  function showNode(node) {
    const tr = rows.get(node.id);
    if (tr) {
      const status = tr.querySelector('[data-field="status"]');
      status.textContent = node.word || node.status;
      status.className = "status " + classOf(node);
      tr.querySelector('[data-field="attempt"]').textContent = node.attempt;
      if ("why" in node) tr.querySelector('[data-field="why"]').textContent = node.why ?? "";
      if ("started_at" in node) tr.querySelector('[data-field="seconds"]').textContent = seconds(node);
      if (typeof node.cost_text === "string") tr.querySelector('[data-field="cost"]').textContent = node.cost_text; // the server's figure
      tr.classList.toggle("faded", node.status === "skipped" || node.status === "cancelled");
    }
    if (live.cy && classOf(node) !== node.drawnClass) { // downstream steps often look the same
      node.drawnClass = classOf(node);
      live.cy.getElementById(node.id).classes(node.drawnClass);
    }
    unlabelled.add(node.id);
    if (live.cy && labelsReadable()) relabel();
  }

  const panel = document.getElementById("step-panel");
  let openStep = null;
  let panelTimer = 0;

  function openPanel(step) {
    if (live.selected !== step) { live.selected = step; tell("forge:select", { step }); }
    openStep = step;
    clearTimeout(panelTimer);
    fetch(panel.dataset.url + encodeURIComponent(step) + "/", { credentials: "same-origin" })
      .then((r) => (r.ok ? r.text() : Promise.reject(r.status)))
      .then((html) => {
        if (openStep !== step) return;
        panel.innerHTML = html;
        window.htmx?.process(panel); // its decision posts by htmx and swaps its card, as the page's cards do
        // A running step's output comes as it is printed (the worker writes it every half second).
        if (panel.querySelector('.step-panel[data-running="true"]')) panelTimer = setTimeout(() => openPanel(step), 1000);
      })
      .catch(() => { panel.textContent = "Could not load step " + step + "."; });
  }
  live.openPanel = openPanel;
  live.select = openPanel;
  document.getElementById("cancel-form")?.addEventListener("submit", (e) => {
    // What stops, as the page shows it now (the one writer of this sentence: only this dialog says it).
    const moving = [...nodes.values()].filter((n) => n.status === "running" || n.status === "waiting").map((n) => n.id);
    const says = "Cancel run " + data.run + "? " + (moving.length ? "Running or waiting steps stop: " + moving.join(", ") + ". " : "")
      + "Steps not yet started never start.";
    if (!confirm(says)) e.preventDefault();
  });
  document.addEventListener("click", (e) => {
    const link = e.target.closest("[data-open-step]");
    if (link) openPanel(link.dataset.openStep);
  });

  function apply(batch) {
    const touched = new Set();
    const now = Date.now();
    for (const event of batch) {
      if (event.id <= live.lastApplied) continue; // already shown: a replay after a reconnect overlaps
      live.lastApplied = event.id;
      live.applied.push(event.id);
      live.appliedAt.push(now);
      if (event.kind === "step" && nodes.has(event.step)) {
        const node = nodes.get(event.step);
        const d = event.data;
        Object.assign(node, { status: d.status, attempt: d.attempt, wait: d.wait, error: d.error, error_code: d.error_code,
                              why: d.why, word: d.word, started_at: d.started_at, finished_at: d.finished_at,
                              cost: d.cost, cost_text: d.cost_text, tokens: d.tokens });
        if (typeof d.iteration === "number") node.iteration = d.iteration; // a loop's count, on the graph's node
        touched.add(node.id);
        if (live.runStatus === "pending") showRun("running"); // a step moved: the run has started
        // A step that ended changes what the steps after it wait for: the event says their new sentences.
        for (const [id, why] of Object.entries(d.downstream || {})) {
          if (nodes.has(id)) { nodes.get(id).why = why; touched.add(id); }
        }
      } else if (event.kind === "child" && nodes.has(event.step)) {
        nodes.get(event.step).child_run = event.data.run;
        touched.add(event.step);
      } else if (event.kind === "run") {
        showRun(event.data.status);
      }
    }
    tell("forge:events", { events: batch });
    const draw = () => {
      touched.forEach((id) => showNode(nodes.get(id)));
      if (live.cy && touched.size) showPath(live.cy);
    };
    if (live.cy) live.cy.batch(draw); else draw();
    if (openStep && batch.some((e) => e.step === openStep)) {
      clearTimeout(panelTimer);
      panelTimer = setTimeout(() => openPanel(openStep), 250); // one reload for a burst of its events
    }
  }

  function snapshot(message) {
    for (const [id, step] of Object.entries(message.steps)) {
      if (nodes.has(id)) Object.assign(nodes.get(id), step);
    }
    live.lastApplied = message.last_id;
    showRun(message.run.status);
    tell("forge:snapshot", { last_id: message.last_id, run: message.run });
    const draw = () => { nodes.forEach(showNode); if (live.cy) showPath(live.cy); };
    if (live.cy) live.cy.batch(draw); else draw();
  }

  function flush() {
    frame = 0;
    const batch = queue.splice(0, PER_FRAME);
    apply(batch);
    if (queue.length) frame = requestAnimationFrame(flush);
  }

  function setBadge(state) {
    badge.dataset.state = state;
    if (state === "live") badge.textContent = "live";
    else if (state === "reconnecting") badge.textContent = "reconnecting…";
    else badge.textContent = "stale since " + lostAt.toLocaleTimeString([], { hour12: false });
  }

  function connect() {
    const scheme = location.protocol === "https:" ? "wss://" : "ws://";
    socket = new WebSocket(scheme + location.host + "/ws/runs/" + data.run + "/?after=" + live.lastApplied);
    live.socket = socket;
    let heard = Date.now();
    const heartbeat = setInterval(() => {
      // A socket that stays open but says nothing may be dead: ask, and start again if no answer comes.
      if (socket.readyState !== WebSocket.OPEN) return;
      if (Date.now() - heard > 15000) { socket.close(); return; }
      if (Date.now() - heard > 10000) socket.send('{"type": "ping"}');
    }, 2500);
    socket.onopen = () => { retry = 0; lostAt = null; heard = Date.now(); setBadge("live"); };
    socket.onmessage = (message) => {
      heard = Date.now();
      let payload;
      try { payload = JSON.parse(message.data); } catch (e) { return; }
      if (payload.type === "events") {
        queue.push(...payload.events);
        if (!frame) frame = requestAnimationFrame(flush);
      } else if (payload.type === "snapshot") {
        queue = [];
        snapshot(payload);
      }
    };
    socket.onclose = (closed) => {
      clearInterval(heartbeat);
      if (frame) { cancelAnimationFrame(frame); flush(); }
      if (closed.code === 4403 || closed.code === 4404) { badge.dataset.state = "stale"; badge.textContent = "not allowed to watch this run"; return; }
      lostAt = lostAt || new Date();
      setBadge(retry >= 3 ? "stale" : "reconnecting");
      const delay = Math.min(10000, 250 * 2 ** retry);
      retry += 1;
      setTimeout(connect, delay);
    };
  }

  // A label is text too small to read when zoomed out far (min-zoomed-font-size): measuring it again on every
  // status change is most of what a burst costs on a large graph, so labels follow once they can be read.
  const unlabelled = new Set();
  const labelsReadable = () => live.cy.zoom() * 11 >= 7;
  function relabel() {
    live.cy.batch(() => unlabelled.forEach((id) => live.cy.getElementById(id).data("label", label(nodes.get(id)))));
    unlabelled.clear();
  }

  // Where a loop step is, worded as forge/runs/reads/loop_count.py words it: the fix cycle (0 in the first review) of a
  // reviewer/fix loop, whose calls are review, fix, review...; an iterate loop's iteration.
  function loopCount(n) {
    if (!n.loop || !n.iteration) return "";
    return n.loop.review ? "cycle " + Math.floor(n.iteration / 2) + " of " + n.loop.max : "iteration " + n.iteration + " of " + n.loop.max;
  }
  live.loopCount = (id) => loopCount(nodes.get(id));

  function label(n) {
    const count = loopCount(n);
    return n.id + "\n" + (n.word || n.status) + (n.attempt > 1 ? " ×" + n.attempt : "") + (count ? "\n" + count : "")
      + (n.child_run ? "\n→ run " + n.child_run : "");
  }

  function showPath(cy) {
    // The path taken: an edge whose step ran after its upstream finished; one into a skipped step fades.
    cy.edges().forEach((edge) => {
      const target = nodes.get(edge.data("target")).status;
      edge.toggleClass("taken", nodes.get(edge.data("source")).status === "completed" && !["pending", "skipped", "cancelled"].includes(target));
      edge.toggleClass("faded", target === "skipped" || target === "cancelled");
    });
  }

  function drawGraph() {
    if (!window.cytoscape || !window.ELK || !window.forgeGraph) return;
    live.cy = window.forgeGraph.draw({
      container: document.getElementById("graph"), nodes: data.nodes, layout: data.layout, placements: data.placements, labelOf: label,
      classOf,
      drawn: () => { live.drawnAt = performance.now(); },
      laidOut: () => { live.laidOutAt = performance.now(); },
    });
    unlabelled.clear(); // drawn with the labels of now
    live.cy.batch(() => showPath(live.cy));
    live.cy.on("tap", "node", (e) => openPanel(e.target.id()));
    live.cy.on("zoom", () => { if (unlabelled.size && labelsReadable()) relabel(); });
  }

  drawGraph();
  connect();
})();
