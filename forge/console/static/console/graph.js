// A workflow version's graph: Cytoscape on positions computed once per version by elkjs in its Web Worker and
// kept on the server by the version's content hash. Until a version has them, the graph is drawn at once
// with a quick layering, then moved. Where a person placed a step (placements, by step id) is the truth: ELK
// lays out the others only and never moves a placed step; the kept layout caches the unplaced steps' places. Fan-outs and chains of many steps are drawn folded into one node
// (graph_groups.js) that opens on a click; the folded graph is laid out in the page. Used by the run view
// (run.js) and the workflow page (workflow.js); graph_controls.js drives window.forgeGraph.view. The editor
// (editor/editor_graph.js) draws with the same styles, layouts and folding, exported on window.forgeGraph.
(function () {
  "use strict";
  const FONT = 11;
  const MIN_FONT = 7; // a label smaller than this on screen is not drawn: it cannot be read
  const READABLE = MIN_FONT / FONT; // the zoom from which labels show
  const ZOOM = { min: 0.1, max: 3, fit: 1.5 }; // a fit never blows a small graph up past 1.5x
  // The first view never shows labels smaller than this (9 px on screen): a graph that does not fit at it is
  // shown in part, at it, on what matters; Fit still shows everything.
  const FIRST = 0.8;
  const GROUP = { width: 150, height: 64 };
  const STEP = { width: 120, height: 44 };

  function quickLayout(nodes) {
    // Layers by longest upstream path, in document order: instant.
    const byId = new Map(nodes.map((n) => [n.id, n]));
    const depth = new Map();
    const layerOf = (n) => {
      if (!depth.has(n.id)) depth.set(n.id, n.deps.length ? 1 + Math.max(...n.deps.map((d) => layerOf(byId.get(d)))) : 0);
      return depth.get(n.id);
    };
    const filled = [];
    return Object.fromEntries(nodes.map((n) => {
      const layer = layerOf(n);
      filled[layer] = (filled[layer] || 0) + 1;
      return [n.id, { x: 60 + layer * 170, y: 22 + (filled[layer] - 1) * 74 }];
    }));
  }

  function elkLayout(elk, nodes) {
    return elk.layout({
      id: "root",
      layoutOptions: { "elk.algorithm": "layered", "elk.direction": "RIGHT", "elk.layered.spacing.nodeNodeBetweenLayers": "40",
                       // Positions are all the page takes: straight edge routing and one crossing sweep.
                       "elk.edgeRouting": "POLYLINE", "elk.layered.thoroughness": "1" },
      children: nodes.map((n) => ({ id: n.id, ...(n.proxy ? GROUP : STEP) })),
      edges: nodes.flatMap((n) => n.deps.map((d) => ({ id: d + "->" + n.id, sources: [d], targets: [n.id] }))),
    }).then((laid) => Object.fromEntries(laid.children.map((c) => [c.id, { x: c.x + c.width / 2, y: c.y + c.height / 2 }])));
  }

  // Positions for `nodes` ([{id, deps}]): a placed step where it was placed; an unplaced one where `laid` says,
  // moved as its neighbours (placed, or settled before it) were moved from their laid places (it stays beside
  // them), then down until it overlaps nothing. Without placements, `laid` as it is.
  function settle(nodes, laid, placed) {
    const out = {};
    const free = [];
    nodes.forEach((n) => {
      const p = placed && placed[n.id];
      if (p) out[n.id] = { x: p.x, y: p.y };
      else if (laid[n.id]) free.push(n);
    });
    if (free.length === nodes.length) { free.forEach((n) => { out[n.id] = { x: laid[n.id].x, y: laid[n.id].y }; }); return out; }
    const near = new Map(nodes.map((n) => [n.id, [...n.deps]]));
    nodes.forEach((n) => n.deps.forEach((d) => near.get(d)?.push(n.id)));
    const W = STEP.width + 16;
    const H = STEP.height + 16;
    const grid = new Map();
    const key = (i, j) => i + "," + j;
    const occupy = (p) => { const k = key(Math.floor(p.x / W), Math.floor(p.y / H)); if (!grid.has(k)) grid.set(k, []); grid.get(k).push(p); };
    const taken = (p) => {
      const i = Math.floor(p.x / W);
      const j = Math.floor(p.y / H);
      for (let a = i - 1; a <= i + 1; a += 1) for (let b = j - 1; b <= j + 1; b += 1) {
        if ((grid.get(key(a, b)) || []).some((q) => Math.abs(q.x - p.x) < W && Math.abs(q.y - p.y) < H)) return true;
      }
      return false;
    };
    Object.values(out).forEach(occupy);
    free.forEach((n) => {
      // Its neighbours placed, or settled before it (in document order a chain follows the step it hangs from).
      const moved = near.get(n.id).filter((m) => out[m] && laid[m]);
      const dx = moved.reduce((sum, m) => sum + out[m].x - laid[m].x, 0) / (moved.length || 1);
      const dy = moved.reduce((sum, m) => sum + out[m].y - laid[m].y, 0) / (moved.length || 1);
      const p = { x: laid[n.id].x + dx, y: laid[n.id].y + dy };
      for (let tries = 0; tries < 1000 && taken(p); tries += 1) p.y += H;
      out[n.id] = p;
      occupy(p);
    });
    return out;
  }

  function keepLayout(url, positions) {
    // The first page to lay out this version keeps the positions on the server for every page after it.
    const token = document.querySelector("input[name=csrfmiddlewaretoken]")?.value || "";
    fetch(url, {
      method: "POST", credentials: "same-origin", body: JSON.stringify(positions),
      headers: { "Content-Type": "application/json", "X-CSRFToken": token },
    }).catch(() => {});
  }

  // How every graph is drawn (a big one cheaper); what this file and graph_controls.js mark are data fields.
  function styles(big) {
    return [
      { selector: "node", style: { shape: "round-rectangle", width: 120, height: 44, label: "data(label)", "text-wrap": "wrap",
                                   "text-valign": "center", "text-max-width": STEP.width - 10, "font-size": 11, "min-zoomed-font-size": 7, "background-color": "#fff", "border-width": 2, "border-color": "#8a96a3" } },
      { selector: "edge", style: { width: 1.5, "curve-style": big ? "haystack" : "bezier", "target-arrow-shape": big ? "none" : "triangle", "line-color": "#b5bec7", "target-arrow-color": "#b5bec7" } },
      { selector: ".status-running", style: { "border-color": "#2457c5", "background-color": "#e8f0fe" } },
      { selector: ".status-waiting", style: { "border-color": "#8a5a00", "background-color": "#fff4d6", "border-style": "dashed" } },
      { selector: ".status-completed", style: { "border-color": "#1f7a3f", "background-color": "#e3f4e8" } },
      { selector: ".status-failed", style: { "border-color": "#b3261e", "background-color": "#fde7e6" } },
      // Never ran because something upstream failed: not the failure itself, so its own shape and colour.
      { selector: ".status-upstream-failed", style: { shape: "cut-rectangle", "border-style": "dashed", "border-color": "#a0522d", "background-color": "#f6efe9", color: "#6b3a1f" } },
      { selector: ".status-skipped, .status-cancelled", style: { opacity: 0.45 } },
      { selector: "edge.taken", style: { width: 2.5, "line-color": "#1f7a3f", "target-arrow-color": "#1f7a3f" } },
      { selector: "edge.faded", style: { opacity: 0.3, "line-style": "dashed" } },
      // What this file and graph_controls.js mark are data fields: run.js sets a step's classes whole.
      { selector: "node.group", style: { width: GROUP.width, height: GROUP.height, "border-width": 4, "border-style": "double", "font-weight": "bold", "text-max-width": GROUP.width - 10 } },
      { selector: "node.group[?open]", style: { width: 220, "text-max-width": 210, height: 30, "border-width": 1, "border-style": "dashed", "background-color": "#f5f6f8", "font-weight": "normal" } },
      // A folded step is its group's size, under it: its edges (and their arrows) end at the group's border.
      { selector: "node[?inside]", style: { visibility: "hidden", events: "no", width: GROUP.width, height: GROUP.height } },
      { selector: "edge[?folded]", style: { display: "none" } },
      { selector: "node[?dim], edge[?dim]", style: { opacity: 0.2 } },
      { selector: "node[?out]", style: { display: "none" } },
      { selector: "node:selected", style: { "underlay-color": "#2457c5", "underlay-opacity": 0.3, "underlay-padding": 7 } },
      { selector: "node[?focus]", style: { "outline-width": 3, "outline-color": "#1d2329", "outline-offset": 4 } },
    ];
  }

  // What a folded group says of its steps' statuses on the run page (none on a workflow's page).
  const ORDER = ["failed", "upstream-failed", "running", "waiting", "pending", "completed", "skipped", "cancelled"];
  const WORD = { completed: "done", pending: "not started", "upstream-failed": "not run" };
  // A step's state as the page words it: one that never ran because something upstream failed is not a failure.
  const stateOf = (n) => (n.status === "failed" && n.error_code === "upstream_failed" ? "upstream-failed" : n.status);
  function tally(members) {
    const steps = window.forgeRun?.nodes;
    if (!steps) return { text: "", status: "" };
    const counts = {};
    members.forEach((id) => { const n = steps.get(id); const s = n ? stateOf(n) : "pending"; counts[s] = (counts[s] || 0) + 1; });
    const said = ORDER.filter((s) => counts[s]).map((s) => counts[s] + " " + (WORD[s] || s));
    const status = ["failed", "running", "waiting"].find((s) => counts[s])
      || (counts.completed === members.length ? "completed" : counts.pending ? "pending" : ORDER.find((s) => counts[s]));
    return { text: said.slice(0, 3).join(" · "), status, counts };
  }

  // container: the element, with data-elk-worker and data-layout-url; nodes: [{id, deps}]; layout: the stored
  // positions or null; labelOf(node), classOf(node): what each node shows; drawn(), laidOut(): when each happened.
  // placements: where people put steps (by id; the truth), or null.
  function draw({ container, nodes, layout, placements, labelOf, classOf, drawn, laidOut }) {
    const placed = Object.fromEntries(nodes.filter((n) => placements && placements[n.id]).map((n) => [n.id, placements[n.id]]));
    const unplaced = nodes.filter((n) => !placed[n.id]);
    // Nothing to lay out when every step is placed or the kept layout has the rest.
    const stored = unplaced.every((n) => layout && layout[n.id]) ? layout || {} : null;
    let full = settle(nodes, stored || quickLayout(nodes), placed); // every step's place, with nothing folded
    const big = nodes.length > 300;
    const Groups = window.forgeGraphGroups;
    const groups = Groups ? Groups.find(nodes) : [];
    const groupOf = new Map();
    groups.forEach((g) => g.members.forEach((id) => groupOf.set(id, g)));
    const folded = new Set(groups.map((g) => g.id));
    let elk = null;
    const worker = () => (elk = elk || new window.ELK({ workerUrl: container.dataset.elkWorker }));
    const foldedLayouts = new Map(); // folded groups -> positions of that graph, laid out in this page

    // Everything a fold decides is computed before Cytoscape is made: it then styles each element once.
    const at = where(laidOutNow(() => first()));
    const flags = folds();
    const cy = window.cytoscape({
      container,
      elements: [
        ...nodes.map((n) => ({ data: { id: n.id, label: labelOf(n), inside: flags.inside.has(n.id) ? 1 : 0 }, position: at[n.id], classes: classOf(n) })),
        ...groups.map((g) => ({ data: { id: g.id, group: 1, ...groupLook(g) }, position: at[g.id], classes: groupLook(g).classes, selectable: false })),
        ...nodes.flatMap((n) => n.deps.map((d) => {
          const id = d + "->" + n.id;
          return { data: { id, source: d, target: n.id, folded: flags.folded.has(id) ? 1 : 0 } };
        })),
      ],
      layout: { name: "preset", fit: false },
      minZoom: ZOOM.min, maxZoom: ZOOM.max,
      // A large graph draws cheaper: straight edges, a bitmap while panning, no label too small to read.
      textureOnViewport: big, hideEdgesOnViewport: big,
      style: styles(big),
    });

    function folding() { return [...folded].sort().join(" "); }
    // The positions for the graph as it is folded now: laid out at once, and again when elkjs answers (then()).
    function laidOutNow(then) {
      if (!folded.size) return full;
      const key = folding();
      if (foldedLayouts.has(key)) return foldedLayouts.get(key);
      const graph = Groups.condense(nodes, groups, folded);
      elkLayout(worker(), graph).then((elkLaid) => {
        const laid = settle(graph, elkLaid, placed);
        foldedLayouts.set(key, laid);
        if (folding() !== key) return;
        place(laid);
        then?.();
      }).catch(() => {}); // the quick layering stays
      return settle(graph, quickLayout(graph), placed);
    }

    function where(laid) {
      // A folded group's steps sit under it (their edges meet there); an opened group's header sits above its steps.
      // Each gets its own copy: Cytoscape keeps the object an element is made with, and moves it in place.
      const out = {};
      nodes.forEach((n) => { const g = groupOf.get(n.id); const p = laid[g && folded.has(g.id) ? g.id : n.id]; if (p) out[n.id] = { x: p.x, y: p.y }; });
      groups.forEach((g) => {
        if (folded.has(g.id)) { if (laid[g.id]) out[g.id] = { x: laid[g.id].x, y: laid[g.id].y }; return; }
        const at = g.members.map((id) => laid[id]).filter(Boolean);
        if (!at.length) return;
        const xs = at.map((p) => p.x);
        out[g.id] = { x: (Math.min(...xs) + Math.max(...xs)) / 2, y: Math.min(...at.map((p) => p.y)) - STEP.height / 2 - 28 };
      });
      return out;
    }

    function arrange(then) { place(laidOutNow(then)); }

    function place(laid) {
      if (shown?.hide) { alone(); return; }
      const to = where(laid);
      cy.batch(() => cy.nodes().forEach((n) => { if (to[n.id()]) n.position(to[n.id()]); }));
    }

    function alone() {
      // Hide the rest: what is left is laid out on its own, close together, not where it was among the rest.
      const graph = Groups ? Groups.condense(nodes, groups, folded) : nodes;
      const keep = new Set(cy.nodes().filter((n) => !n.data("out") && !n.data("inside")).map((n) => n.id()));
      const kept = graph.filter((n) => keep.has(n.id)).map((n) => ({ id: n.id, deps: n.deps.filter((d) => keep.has(d)) }));
      const to = where(quickLayout(kept));
      cy.batch(() => cy.nodes().forEach((n) => { if (to[n.id()]) n.position(to[n.id()]); }));
    }

    let shown = null; // what Find asked: {hit: the step ids found, hide: whether the rest is hidden or dimmed}, or null
    function filter(hit, hide) {
      const was = shown?.hide;
      shown = hit ? { hit, hide } : null;
      const off = (n) => {
        if (!shown) return false;
        if (!n.data("group")) return !hit.has(n.id());
        if (n.data("open")) return hide; // a header is no step
        return !groups.find((g) => g.id === n.id()).members.some((id) => hit.has(id));
      };
      cy.batch(() => {
        cy.nodes().forEach((n) => { const away = off(n); n.data({ dim: away && !hide ? 1 : 0, out: away && hide ? 1 : 0 }); });
        cy.edges().forEach((e) => e.data("dim", e.source().data("dim") || e.target().data("dim") ? 1 : 0));
      });
      if (shown?.hide) alone(); else if (was) arrange(() => {});
    }

    function folds() {
      // Members of a folded group hide behind it; of the edges that cross into it, one each way is drawn.
      const inside = new Set();
      groups.forEach((g) => { if (folded.has(g.id)) g.members.forEach((id) => inside.add(id)); });
      const end = (id) => (inside.has(id) ? groupOf.get(id).id : id);
      const seen = new Set();
      const hidden = new Set();
      nodes.forEach((n) => n.deps.forEach((d) => {
        const key = end(d) + "\u0000" + end(n.id);
        if (end(d) === end(n.id) || seen.has(key)) hidden.add(d + "->" + n.id);
        seen.add(key);
      }));
      return { inside, folded: hidden };
    }

    function mark() {
      const now = folds();
      cy.batch(() => {
        nodes.forEach((n) => cy.getElementById(n.id).data("inside", now.inside.has(n.id) ? 1 : 0));
        cy.edges().forEach((e) => e.data("folded", now.folded.has(e.id()) ? 1 : 0));
        groups.forEach(relabel);
      });
      if (shown) filter(shown.hit, shown.hide);
      describe();
    }

    function groupLook(g) {
      const shut = folded.has(g.id);
      const said = tally(g.members);
      const first = g.members[0];
      const last = g.members[g.members.length - 1];
      const count = g.chains ? g.chains + " chains, " + g.members.length + " steps" : g.members.length + " steps";
      const label = shut ? [(g.chains ? "" : "+") + count, first + " … " + last, said.text].filter(Boolean).join("\n")
        : "− fold " + count + " (" + first + " … " + last + ")";
      return { label, open: shut ? 0 : 1, classes: "group" + (shut && said.status ? " status-" + said.status : "") };
    }

    function relabel(g) {
      const look = groupLook(g);
      const proxy = cy.getElementById(g.id);
      proxy.data({ label: look.label, open: look.open });
      proxy.classes(look.classes);
    }

    function describe() {
      const shown = nodes.length - groups.filter((g) => folded.has(g.id)).reduce((sum, g) => sum + g.members.length, 0) + folded.size;
      container.setAttribute("aria-label", "Graph of " + nodes.length + " step" + (nodes.length === 1 ? "" : "s")
        + (folded.size ? ", drawn as " + shown + " nodes: " + folded.size + " group" + (folded.size === 1 ? "" : "s") + " of many steps folded" : "")
        + ". Arrow keys move between steps, Enter opens the step or group, plus and minus zoom, 0 fits.");
    }

    function fit(eles) {
      fitTo(cy, eles);
      changed();
    }

    // Where a first view looks when the graph does not fit readable: the run's failed step, else a running or
    // waiting one, else the first steps (the leftmost).
    function matters() {
      const steps = window.forgeRun?.nodes;
      const state = (id) => { const n = steps?.get(id); return n ? stateOf(n) : ""; };
      const drawn = (id) => { const g = groupOf.get(id); return cy.getElementById(g && folded.has(g.id) ? g.id : id); };
      for (const want of [["failed"], ["running", "waiting"]]) {
        const hit = nodes.find((n) => want.includes(state(n.id)));
        if (hit) return drawn(hit.id);
      }
      return null;
    }

    function first() {
      // The whole graph when it fits at a readable zoom; else part of it, readable, on what matters.
      const on = cy.nodes().filter((n) => n.visible() && !n.data("open"));
      if (!on.length) { fit(); return; }
      cy.fit(on, 30);
      if (cy.zoom() >= FIRST) { if (cy.zoom() > ZOOM.fit) cy.zoom(ZOOM.fit); cy.center(on); changed(); return; }
      cy.zoom(FIRST);
      const target = matters();
      if (target) cy.center(target);
      else {
        const box = on.boundingBox();
        const leftmost = Math.min(...on.map((n) => n.position("x")));
        const mid = on.filter((n) => n.position("x") <= leftmost + 1).boundingBox();
        cy.pan({ x: 30 - box.x1 * FIRST, y: cy.height() / 2 - ((mid.y1 + mid.y2) / 2) * FIRST });
      }
      changed();
    }

    // Whether some of what is drawn lies outside the card: the page says so, and that Fit shows all.
    function partial() {
      const box = cy.nodes().filter((n) => n.visible() && !n.data("open")).boundingBox();
      const seen = cy.extent();
      return box.w > 0 && (box.x1 < seen.x1 - 1 || box.y1 < seen.y1 - 1 || box.x2 > seen.x2 + 1 || box.y2 > seen.y2 + 1);
    }

    function zoomBy(factor) {
      zoomAround(cy, factor);
      changed();
    }

    const changed = () => container.dispatchEvent(new CustomEvent("forge:graph-changed"));

    function show(group) {
      showGroup(cy, group.members, cy.getElementById(group.id), cy.getElementById(group.id));
      changed();
    }

    function open(id, quiet) {
      const g = groups.find((x) => x.id === id);
      if (!g || !folded.has(id)) return;
      folded.delete(id);
      mark();
      arrange(() => { if (!quiet) show(g); });
      if (!quiet) show(g);
    }

    function fold(id) {
      const g = groups.find((x) => x.id === id);
      if (!g || folded.has(id)) return;
      folded.add(id);
      mark();
      arrange(() => fit());
      fit();
    }

    function reveal(id, centre = true) {
      // A step in a folded group opens it; then the step is in view.
      const g = groupOf.get(id);
      if (g && folded.has(g.id)) open(g.id, true);
      const node = cy.getElementById(id);
      if (!node.length) return;
      cy.$(":selected").unselect();
      node.select();
      const at = node.renderedPosition();
      if (centre || at.x < 0 || at.y < 0 || at.x > cy.width() || at.y > cy.height()) {
        if (cy.zoom() < 1) cy.zoom(1);
        cy.center(node);
        changed();
      }
    }

    groups.forEach((g) => cy.getElementById(g.id).on("tap", (e) => {
      e.stopPropagation(); // a group is no step: run.js opens a step's panel on a tap
      (folded.has(g.id) ? open : fold)(g.id);
    }));
    document.addEventListener("forge:events", (e) => {
      const touched = new Set();
      e.detail.events.forEach((ev) => { if (ev.kind === "step" && groupOf.has(ev.step)) touched.add(groupOf.get(ev.step)); });
      if (touched.size) cy.batch(() => touched.forEach(relabel));
    });
    document.addEventListener("forge:select", (e) => { if (e.detail.step) reveal(e.detail.step, false); else cy.$(":selected").unselect(); });

    describe();
    first();
    // A card that changes width (a phone turned, a pane toggled, full screen) shows its first view again.
    let width = container.clientWidth;
    new ResizeObserver(() => {
      if (!container.clientWidth || container.clientWidth === width) return;
      width = container.clientWidth;
      cy.resize();
      first();
    }).observe(container);
    cy.ready(() => requestAnimationFrame(() => { drawn(); if (stored) laidOut(); }));
    if (!stored) {
      elkLayout(worker(), nodes).then((laid) => {
        if (unplaced.length) keepLayout(container.dataset.layoutUrl, Object.fromEntries(unplaced.map((n) => [n.id, laid[n.id]])));
        full = settle(nodes, laid, placed);
        if (!folded.size) { place(full); first(); }
        requestAnimationFrame(laidOut);
      }).catch(() => {}); // the quick layering stays
    }
    const view = { cy, container, nodes, groups, groupOf, folded, fit, first, partial, zoomBy, open, fold, reveal, filter, ZOOM, READABLE, FIRST, changed };
    window.forgeGraph.view = view;
    document.dispatchEvent(new CustomEvent("forge:graph", { detail: view }));
    return cy;
  }

  // The node of `nodes` an arrow key (dx, dy) reaches from `current`: the nearest within a cone that way.
  // The view on `eles` (by default every visible step: an opened group's header is no step), never closer than
  // ZOOM.fit; centred also when the zoom stopped at its least.
  function fitTo(cy, eles) {
    let on = eles && eles.length ? eles : cy.nodes().filter((n) => n.visible() && !n.data("open"));
    if (!on.length) on = cy.nodes().filter((n) => n.visible());
    if (!on.length) on = cy.nodes();
    if (!on.length) return;
    cy.fit(on, 30);
    if (cy.zoom() > ZOOM.fit) cy.zoom(ZOOM.fit);
    cy.center(on);
  }

  // Zoom by `factor` about the middle of the card, within ZOOM's bounds.
  function zoomAround(cy, factor) {
    const level = Math.min(ZOOM.max, Math.max(ZOOM.min, cy.zoom() * factor));
    cy.zoom({ level, renderedPosition: { x: cy.width() / 2, y: cy.height() / 2 } });
  }

  // An opened group (its member ids and its header node): all of it when that fits readable, else its start
  // (`start`) at a zoom a person reads.
  function showGroup(cy, members, header, start) {
    fitTo(cy, cy.collection(members.map((id) => cy.getElementById(id))).union(header));
    if (cy.zoom() < 1) { cy.zoom(1); cy.center(start); }
  }

  function nearest(nodes, current, dx, dy) {
    const from = current.position();
    let best = null;
    let score = Infinity;
    nodes.forEach((n) => {
      if (n.same(current)) return;
      const x = n.position("x") - from.x;
      const y = n.position("y") - from.y;
      const along = x * dx + y * dy;
      const across = Math.abs(x * dy - y * dx);
      if (along <= 0 || across > along * 2.5) return;
      const s = along + across * 2;
      if (s < score) { score = s; best = n; }
    });
    return best;
  }

  window.forgeGraph = { draw, view: null, stateOf, styles, settle, quickLayout, elkLayout, nearest, fitTo, zoomAround,
                        showGroup, ZOOM, STEP, GROUP, READABLE };
})();
