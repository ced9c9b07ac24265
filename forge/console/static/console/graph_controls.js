// The graph's tools (graph_controls.html) on window.forgeGraph.view (graph.js): fit, zoom within bounds, fold
// and open groups, full screen, find steps by id, name or state (dim or hide the rest), and the keyboard on
// the canvas (arrows move between steps, Enter opens one). On the run page a step found or entered is selected
// through window.forgeRun.select, as a click on it would.
(function () {
  "use strict";
  const bar = document.querySelector(".graph-tools");
  if (!bar) return;
  const card = bar.closest(".graph-card");
  const says = document.getElementById("graph-says");
  const find = document.getElementById("graph-find");
  const status = document.getElementById("graph-status");
  const hide = document.getElementById("graph-hide");
  const found = document.getElementById("graph-found");
  const button = (name) => bar.querySelector('[data-graph="' + name + '"]');
  // The graph's status line: says when the view shows part of the graph (a big one opens readable, in part).
  const part = Object.assign(document.createElement("span"), { id: "graph-part", className: "muted" });
  part.setAttribute("role", "status");
  let view = null;
  let focused = null; // the element the keyboard is on
  let matches = null; // step ids found, in document order, or null when nothing is asked
  let next = 0;

  const run = () => window.forgeRun || null;
  const stateOf = (id) => { const n = run()?.nodes.get(id); return n ? window.forgeGraph.stateOf(n) : ""; };
  const nameOf = (n) => run()?.nodes.get(n.id)?.name || n.name || "";

  function sayOf(ele) {
    if (ele.data("group")) {
      const g = view.groups.find((x) => x.id === ele.id());
      return ele.data("label").replace(/\n/g, ", ") + (view.folded.has(g.id) ? ": folded, Enter opens it" : ": Enter folds it");
    }
    return "Step " + ele.id() + (nameOf(ele) ? " (" + nameOf(ele) + ")" : "") + (stateOf(ele.id()) ? ", " + stateOf(ele.id()) : "");
  }

  function focusOn(ele) {
    if (focused && focused.inside()) focused.data("focus", 0);
    focused = ele;
    if (!ele) return;
    ele.data("focus", 1);
    const at = ele.renderedPosition();
    const cy = view.cy;
    if (at.x < 20 || at.y < 20 || at.x > cy.width() - 20 || at.y > cy.height() - 20) { cy.center(ele); view.changed(); }
    says.textContent = sayOf(ele);
  }

  function move(dx, dy) {
    const cy = view.cy;
    const shown = cy.nodes().filter((n) => n.visible());
    if (!focused || !focused.inside() || !focused.visible()) {
      // Start at the top-left step: where a reader of a left-to-right graph starts.
      focusOn(shown.min((n) => n.position("x") * 4 + n.position("y")).ele);
      return;
    }
    const best = window.forgeGraph.nearest(shown, focused, dx, dy);
    if (best) focusOn(best);
  }

  function choose(ele) {
    if (ele.data("group")) {
      const id = ele.id();
      if (view.folded.has(id)) view.open(id); else view.fold(id);
      focusOn(view.cy.getElementById(id));
      return;
    }
    goTo(ele.id());
  }

  function goTo(id) {
    view.reveal(id);
    if (run()?.select) run().select(id);
    focusOn(view.cy.getElementById(id));
  }

  function bounds() {
    const z = view.cy.zoom();
    button("zoom-in").disabled = z >= view.ZOOM.max - 1e-9;
    button("zoom-out").disabled = z <= view.ZOOM.min + 1e-9;
    button("fold-all").disabled = !view.groups.length || view.folded.size === view.groups.length;
    button("open-all").disabled = !view.folded.size;
  }

  let told = 0;
  function tell() {
    // Once a frame at most: a pan fires many viewport events.
    if (told) return;
    told = requestAnimationFrame(() => {
      told = 0;
      const n = view.nodes.length;
      part.textContent = view.partial() ? "Showing part of " + n + " step" + (n === 1 ? "" : "s") + ": Fit shows all" : "";
    });
  }

  function ask(refit) {
    const text = find.value.trim().toLowerCase();
    const state = status.value;
    if (!text && !state) {
      matches = null;
      found.textContent = "";
      view.filter(null);
    } else {
      const hit = (n) => (!text || n.id.toLowerCase().includes(text) || nameOf(n).toLowerCase().includes(text)) && (!state || stateOf(n.id) === state);
      matches = view.nodes.filter(hit).map((n) => n.id);
      next = 0;
      found.textContent = matches.length + " of " + view.nodes.length + " steps" + (matches.length ? "" : ": none found");
      view.filter(new Set(matches), hide.checked);
    }
    if (refit === true && hide.checked) view.fit(); // what is left shown, whatever was before
  }

  function setUp() {
    bar.hidden = false;
    const { container, cy } = view;
    container.tabIndex = 0;
    container.setAttribute("role", "application");
    container.setAttribute("aria-roledescription", "graph");
    if (!run()) status.hidden = true; // a workflow's page has no states
    button("fit").addEventListener("click", () => view.fit());
    button("zoom-in").addEventListener("click", () => view.zoomBy(1.25));
    button("zoom-out").addEventListener("click", () => view.zoomBy(0.8));
    button("fold-all").addEventListener("click", () => { view.groups.forEach((g) => view.fold(g.id)); ask(); });
    button("open-all").addEventListener("click", () => { view.groups.forEach((g) => view.open(g.id, true)); ask(); view.fit(); });
    button("fullscreen").addEventListener("click", () => {
      if (document.fullscreenElement === card) document.exitFullscreen(); else card.requestFullscreen().catch(() => {});
    });
    document.addEventListener("fullscreenchange", () => {
      const full = document.fullscreenElement === card;
      button("fullscreen").setAttribute("aria-pressed", String(full));
      button("fullscreen").textContent = full ? "Leave full screen" : "Full screen";
      button("fullscreen").setAttribute("aria-label", full ? "Leave full screen (Esc)" : "Show the graph full screen");
      requestAnimationFrame(() => { cy.resize(); view.fit(); });
    });
    container.addEventListener("forge:graph-changed", bounds);
    cy.on("zoom", bounds);
    bounds();
    bar.querySelector(".graph-view").append(part);
    container.addEventListener("forge:graph-changed", tell);
    cy.on("viewport position", tell);
    tell();

    find.addEventListener("input", () => ask(true));
    status.addEventListener("change", () => ask(true));
    hide.addEventListener("change", () => { ask(); view.fit(); });
    find.addEventListener("focus", () => {
      const list = document.getElementById("graph-steps");
      if (list.childElementCount) return;
      list.replaceChildren(...view.nodes.map((n) => Object.assign(document.createElement("option"), { value: n.id, label: nameOf(n) })));
    }, { once: true });
    bar.querySelector("form").addEventListener("submit", (e) => {
      e.preventDefault();
      if (matches === null) ask();
      if (!matches || !matches.length) return;
      const id = matches[next % matches.length];
      next += 1;
      goTo(id);
      found.textContent = "Step " + (matches.indexOf(id) + 1) + " of " + matches.length + " found: " + id;
    });
    let asked = 0;
    document.addEventListener("forge:events", () => {
      // A state filter follows the run; once a frame at most.
      if (!status.value || asked) return;
      asked = requestAnimationFrame(() => { asked = 0; ask(); });
    });
    cy.on("tap", "node", (e) => { if (focused) focusOn(e.target); });

    const KEYS = { ArrowLeft: [-1, 0], ArrowRight: [1, 0], ArrowUp: [0, -1], ArrowDown: [0, 1] };
    container.addEventListener("keydown", (e) => {
      if (e.altKey || e.ctrlKey || e.metaKey) return;
      if (KEYS[e.key]) { move(...KEYS[e.key]); e.preventDefault(); return; }
      if ((e.key === "Enter" || e.key === " ") && focused) { choose(focused); e.preventDefault(); }
    });
    container.addEventListener("blur", () => { if (focused && focused.inside()) focused.data("focus", 0); });
    container.addEventListener("focus", () => { if (focused && focused.inside()) focused.data("focus", 1); });
    card.addEventListener("keydown", (e) => {
      if (e.altKey || e.ctrlKey || e.metaKey || e.target.closest("input, select, textarea")) return;
      const act = { "+": () => view.zoomBy(1.25), "=": () => view.zoomBy(1.25), "-": () => view.zoomBy(0.8), 0: () => view.fit(),
                    f: () => button("fullscreen").click(), "/": () => find.focus() }[e.key];
      if (act) { act(); e.preventDefault(); }
    });
  }

  document.addEventListener("forge:graph", (e) => { if (!view) { view = e.detail; setUp(); } });
})();
