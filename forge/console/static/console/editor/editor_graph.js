// The editor's graph: the shared drawing of graph.js (its styles, ELK layout and folding of long chains and
// fan-outs), drawn only from the server's outline of the text and updated by difference, so a gesture on a
// 1,000-step workflow touches the few elements it changed. Every gesture is one patch of engine/edit
// (onPatch(op)); nothing here changes the drawing by itself: the next outline does. Where a person drags a step
// is a placement (onPlace), never YAML. Needs window.cytoscape, window.forgeGraph and window.forgeGraphGroups
// (classic scripts), and window.ELK for the layered layout (without it the quick layering stays).

const KEYS = { ArrowLeft: [-1, 0], ArrowRight: [1, 0], ArrowUp: [0, -1], ArrowDown: [0, 1] };
const LAYER_X = 170; // a step after another sits this far to its right (graph.js's quick layering)
const ROW_Y = 74;
// What the editor adds to graph.js's styles: implicit edges dashed, a selected edge, problems, kinds.
const OWN = [
  { selector: "edge.implicit", style: { "line-style": "dashed", "line-dash-pattern": [6, 4], "line-color": "#8a96a3", "target-arrow-color": "#8a96a3" } },
  { selector: "edge:selected", style: { width: 3, "line-color": "#2457c5", "target-arrow-color": "#2457c5" } },
  { selector: "node[problem = 'error']", style: { "border-color": "#b3261e", "border-width": 3 } },
  { selector: "node[problem = 'warning']", style: { "border-color": "#8a5a00", "border-width": 3 } },
  { selector: "node[kind = 'approval']", style: { "background-color": "#fff8e6" } },
  { selector: "node[kind = 'subworkflow'], node[kind = 'library']", style: { "background-color": "#eef3fb" } },
  { selector: "node[kind = 'loop']", style: { "border-style": "double", "border-width": 4 } },
];

function el(tag, props = {}, ...children) {
  const node = document.createElement(tag);
  Object.entries(props).forEach(([k, v]) => {
    if (k.startsWith("aria-") || k === "role" || k.startsWith("data-")) node.setAttribute(k, v);
    else node[k] = v;
  });
  node.append(...children);
  return node;
}

// A node's look from its outline entry: its id, and what it runs.
function labelOf(step) {
  const what = step.kind === "agent" ? step.agent || "agent" : step.kind;
  return step.id + "\n(" + what + ")";
}

function severityOf(list) {
  if (!list || !list.length) return "";
  return list.some((p) => (p.severity || "error") === "error") ? "error" : "warning";
}

export function createEditorGraph(container, options = {}) {
  const { readOnly = false } = options;
  const call = (name, ...args) => { if (typeof options[name] === "function") return options[name](...args); return undefined; };
  const F = window.forgeGraph;
  const Groups = window.forgeGraphGroups;

  // The page: tools, the canvas, an overlay for the badges and the connecting handle, and a status line.
  const button = (name, text, label) => el("button", { type: "button", textContent: text, "aria-label": label, "data-editor-graph": name });
  const tools = el("div", { className: "editor-graph-tools", role: "toolbar", "aria-label": "Graph tools" },
    button("fit", "Fit", "Fit the whole graph in view (0)"), button("zoom-in", "+", "Zoom in (+)"), button("zoom-out", "−", "Zoom out (−)"));
  const edits = readOnly ? [] : [
    button("delete", "Delete", "Delete the selected steps or edge (Delete key)"),
    button("duplicate", "Duplicate", "Duplicate the selected step"),
    button("copy", "Copy", "Copy the selected steps as YAML (Ctrl+C)"),
    button("paste", "Paste", "Paste steps copied as YAML (Ctrl+V)"),
  ];
  tools.append(...edits);
  const canvas = el("div", { className: "editor-graph-canvas", tabIndex: 0, role: "application",
    "aria-roledescription": "workflow graph",
    "aria-label": "Workflow graph. Arrow keys move between steps, Enter opens the selected step in the inspector"
      + (readOnly ? "" : ", Delete deletes it, Ctrl+C copies, Ctrl+V pastes") + "; plus and minus zoom, 0 fits." });
  const layer = el("div", { className: "editor-graph-layer" });
  const line = document.createElementNS("http://www.w3.org/2000/svg", "svg");
  line.classList.add("editor-graph-line");
  const path = document.createElementNS("http://www.w3.org/2000/svg", "line");
  line.append(path);
  line.style.display = "none";
  const handle = el("button", { type: "button", className: "editor-graph-handle", hidden: true, tabIndex: -1, textContent: "→" });
  layer.append(line, handle);
  const says = el("p", { className: "editor-graph-says", role: "status" });
  const stage = el("div", { className: "editor-graph-stage" }, canvas, layer);
  container.classList.add("editor-graph");
  container.replaceChildren(tools, stage, says);

  let steps = new Map(); // id -> outline step, as drawn
  let edges = new Map(); // "a->b" -> outline edge
  let nodes = []; // [{id, deps}] for layouts and folding
  const pos = new Map(); // where each step is, nothing folded (Cytoscape positions of folded steps are their group's)
  let placed = {}; // the server's placements
  const mine = {}; // placements made here since, until the server's say them
  let groups = [];
  const opened = new Set(); // groups opened by a person, by their first step
  let problems = {};
  let badges = new Map(); // id -> badge element
  let hover = null;
  let layoutAsked = 0;
  let lastShape = "";
  let lastSeen = ""; // what the last outline drawn showed (update)
  let elk = null;
  const big = () => steps.size > 300;

  const cy = window.cytoscape({
    container: canvas,
    elements: [],
    layout: { name: "preset", fit: false },
    minZoom: F.ZOOM.min, maxZoom: F.ZOOM.max,
    boxSelectionEnabled: !readOnly, selectionType: "single", autoungrabify: readOnly,
    textureOnViewport: false,
    style: [...F.styles(false), ...OWN],
  });
  let drawnBig = false;
  // The selected nodes, asked of Cytoscape again only after the selection changed: the connecting handle follows
  // every frame of a drag, and a selector over 1,000 nodes a frame is work the drag's frames do not need.
  let chosen = null;
  const selectedNodes = () => chosen || (chosen = cy.nodes(":selected"));
  cy.on("select unselect remove", () => { chosen = null; });

  function worker() {
    if (!window.ELK) return null;
    const url = options.elkWorker || container.dataset.elkWorker;
    if (!url) return null;
    return (elk = elk || new window.ELK({ workerUrl: url }));
  }

  const placements = () => ({ ...placed, ...mine });
  const groupId = (g) => "group:" + g.members[0];
  const isFolded = (g) => !opened.has(g.members[0]);

  // ---- update: the outline drawn by difference ----
  function update(outline, placementsNow, problemsByStep) {
    if (!outline || outline.parsed === false || !Array.isArray(outline.steps)) {
      note("The text does not parse: the graph shows the last text that did.");
      container.classList.add("editor-graph-stale");
      return;
    }
    const wasStale = container.classList.contains("editor-graph-stale");
    // An outline that changes nothing drawn (typing in a step's command: twice a second on a 1,000-step
    // workflow) is not compared node by node: its steps' looks, edges, problems and places are the same.
    const seen = JSON.stringify([outline.steps.map((s) => s && [s.id, s.kind, s.agent]),
      (outline.edges || []).map((e) => [e.from, e.to, e.explicit, e.via]), problemsByStep || {}, placementsNow || {}]);
    if (seen === lastSeen && !wasStale) return;
    lastSeen = seen;
    container.classList.remove("editor-graph-stale");
    placed = placementsNow || {};
    problems = problemsByStep || {};
    const first = steps.size === 0 && cy.nodes().length === 0;
    steps = new Map(outline.steps.filter((s) => s && typeof s.id === "string").map((s) => [s.id, s]));
    edges = new Map();
    (outline.edges || []).forEach((e) => {
      if (!steps.has(e.from) || !steps.has(e.to)) return;
      const key = e.from + "->" + e.to;
      const was = edges.get(key);
      // One drawn edge a pair: explicit wins, the ways it is implied add up.
      if (was) edges.set(key, { ...was, explicit: was.explicit || e.explicit, via: [...new Set([...(was.via || []), ...(e.via || [])])] });
      else edges.set(key, { from: e.from, to: e.to, explicit: !!e.explicit, via: e.via || [] });
    });
    const deps = new Map([...steps.keys()].map((id) => [id, []]));
    edges.forEach((e) => deps.get(e.to).push(e.from));
    nodes = [...steps.keys()].map((id) => ({ id, deps: deps.get(id) }));
    groups = Groups ? Groups.find(nodes) : [];
    groups.forEach((g) => { g.id = groupId(g); }); // a group keeps its id (its first step) from one outline to the next
    Object.keys(mine).forEach((id) => { if (!steps.has(id) || samePlace(placed[id], mine[id])) delete mine[id]; });

    // A step or an edge added or removed: ELK lays out again every step nobody placed, so the editor shows what the
    // workflow page will draw; placed steps stay, and the rest stay put while only fields change. On a large
    // graph only the new steps are laid out: moving a thousand nodes is a frame of over 100 ms, and a person
    // typing an id in the YAML changes the shape twice a second.
    const shapeNow = nodes.map((n) => n.id + "<" + n.deps.join(",")).join(";");
    const changed = shapeNow !== lastShape && !first;
    const reshaped = shapeNow !== lastShape && !big();
    lastShape = shapeNow;
    arrange(first, first, reshaped);
    if (changed) keepInView(cy.nodes(":selected").filter((n) => n.visible()).last());
    // The status line speaks of the step it named as it is now (its problems fixed, it renamed or gone).
    if (told !== null || wasStale) {
      const sel = selectedSteps();
      tell(steps.has(told) ? told : sel.length === 1 ? sel[0] : null);
    }
  }

  // Place what has no place, draw, and ask ELK for the fresh places. `all`: every unplaced step is laid out again
  // (a first draw, a group opened or folded: the graph as drawn changed its shape).
  function arrange(all, fitting, again = false) {
    const fresh = position(all);
    draw();
    if (fitting) fitFirst();
    const at = placements();
    const lay = again ? shape().map((n) => n.id).filter((id) => !at[id]) : fresh;
    if (lay.length) layOut(lay, fitting, all ? [] : fresh);
    badgesNow();
  }

  // The graph as drawn: a folded group is one node (graph_groups.js's condense), its steps hidden under it.
  const shape = () => (Groups && groups.length ? Groups.condense(nodes, groups, new Set(groups.filter(isFolded).map((g) => g.id))) : nodes);

  const samePlace = (a, b) => a && b && Math.abs(a.x - b.x) < 0.5 && Math.abs(a.y - b.y) < 0.5;

  // Places for the nodes drawn (steps, folded groups) that have none yet: the placed ones where placed; the
  // others beside their neighbours at once (the quick layering when `all`), then where ELK puts them (layOut).
  // Returns those laid out.
  function position(all) {
    const at = placements();
    const drawn = shape();
    const ids = new Set(drawn.map((n) => n.id));
    [...pos.keys()].forEach((id) => { if (!ids.has(id) || (all && !at[id])) pos.delete(id); });
    drawn.forEach((n) => { if (at[n.id]) pos.set(n.id, { x: at[n.id].x, y: at[n.id].y }); });
    const fresh = drawn.filter((n) => !pos.has(n.id)).map((n) => n.id);
    if (!fresh.length) return [];
    if (all) {
      const laid = F.settle(drawn, F.quickLayout(drawn), at);
      fresh.forEach((id) => pos.set(id, laid[id]));
      return fresh;
    }
    const byId = new Map(drawn.map((n) => [n.id, n]));
    const fixed = Object.fromEntries([...pos].map(([id, p]) => [id, p]));
    const guess = {};
    const bottom = Math.max(0, ...[...pos.values()].map((p) => p.y));
    const left = pos.size ? Math.min(...[...pos.values()].map((p) => p.x)) : 60;
    fresh.forEach((id) => {
      const ups = byId.get(id).deps.map((d) => fixed[d] || guess[d]).filter(Boolean);
      guess[id] = ups.length ? { x: Math.max(...ups.map((p) => p.x)) + LAYER_X, y: ups.reduce((s, p) => s + p.y, 0) / ups.length }
        : { x: left, y: bottom + ROW_Y };
    });
    const laid = F.settle(drawn, { ...fixed, ...guess }, fixed);
    fresh.forEach((id) => pos.set(id, laid[id]));
    return fresh;
  }

  // ELK's layered layout of the graph as drawn, in its worker: the nodes in `fresh` move there (beside their
  // neighbours as they are now); every other node stays where it is, a placed step always.
  function layOut(fresh, fitting, added = []) {
    const elkNow = worker();
    if (!elkNow) return;
    const asked = ++layoutAsked;
    container.dataset.layout = "pending"; // "done" once ELK has answered: what a test or a page may wait on
    const drawn = shape();
    F.elkLayout(elkNow, drawn).then((laid) => {
      if (asked !== layoutAsked) return; // a newer outline asked again
      container.dataset.layout = "done";
      const now = new Set(shape().map((n) => n.id));
      const freshSet = new Set(fresh.filter((id) => now.has(id) && pos.has(id)));
      const fixed = {};
      pos.forEach((p, id) => { if (!freshSet.has(id)) fixed[id] = p; });
      Object.assign(fixed, placements());
      const to = F.settle(drawn, laid, fixed);
      freshSet.forEach((id) => { if (to[id] && !placements()[id]) pos.set(id, to[id]); });
      draw();
      if (fitting) fitFirst();
      else {
        // What a person just added, or has selected, stays in view when the layout moves it.
        const seen = cy.collection(added.map((id) => cy.getElementById(id))).union(cy.nodes(":selected")).filter((n) => n.visible());
        keepInView(seen.length ? seen.last() : null);
      }
      badgesNow();
    }).catch(() => { if (asked === layoutAsked) container.dataset.layout = "done"; }); // the quick places stay
  }

  // The elements Cytoscape should hold now, compared with those it holds: only the differences are applied. The
  // steps of a folded group are not drawn at all (a 1,000-step fan-out is three nodes to drag among); the edges
  // into or out of it are drawn once each way, as a bundle.
  function draw() {
    const want = new Map();
    const inside = new Map(); // step id -> its folded group
    groups.forEach((g) => { if (isFolded(g)) g.members.forEach((id) => inside.set(id, g)); });
    // A folded group is where it was laid out; an opened one's header sits above its steps.
    const centre = (g) => {
      if (isFolded(g)) return pos.get(g.id) || { x: 0, y: 0 };
      const at = g.members.map((id) => pos.get(id)).filter(Boolean);
      if (!at.length) return { x: 0, y: 0 };
      const xs = at.map((p) => p.x);
      return { x: (Math.min(...xs) + Math.max(...xs)) / 2, y: Math.min(...at.map((p) => p.y)) - F.STEP.height / 2 - 28 };
    };
    steps.forEach((s, id) => {
      if (inside.has(id)) return;
      want.set(id, { group: "nodes", data: { id, label: labelOf(s), kind: s.kind, problem: severityOf(problems[id]) }, position: pos.get(id) });
    });
    groups.forEach((g) => {
      const shut = isFolded(g);
      const count = g.chains ? g.chains + " chains, " + g.members.length + " steps" : g.members.length + " steps";
      const first = g.members[0];
      const last = g.members[g.members.length - 1];
      const bad = g.members.filter((id) => (problems[id] || []).length);
      const label = shut ? "+" + count + "\n" + first + " … " + last + (bad.length ? "\n" + bad.length + " with problems" : "")
        : "− fold " + count + " (" + first + " … " + last + ")";
      want.set(g.id, { group: "nodes", data: { id: g.id, group: 1, open: shut ? 0 : 1, label, problem: shut ? severityOf(bad.flatMap((id) => problems[id])) : "" },
                       position: centre(g), classes: "group" });
    });
    const end = (id) => (inside.has(id) ? inside.get(id).id : id);
    edges.forEach((e, key) => {
      const a = end(e.from);
      const b = end(e.to);
      if (a === b) return;
      if (a === e.from && b === e.to) {
        want.set(key, { group: "edges", data: { id: key, source: a, target: b, explicit: e.explicit ? 1 : 0, via: (e.via || []).join(", "), bundle: 0 },
                        classes: e.explicit ? "" : "implicit" });
        return;
      }
      const id = a + "->" + b;
      const was = want.get(id);
      want.set(id, { group: "edges", data: { id, source: a, target: b, explicit: 0, via: "", bundle: (was ? was.data.bundle : 0) + 1 }, classes: "" });
    });

    cy.batch(() => {
      cy.elements().forEach((ele) => { if (!want.has(ele.id())) ele.remove(); });
      const add = [];
      want.forEach((w, id) => {
        const ele = cy.getElementById(id);
        if (!ele.length) { add.push({ ...w, position: w.position ? { ...w.position } : undefined }); return; }
        const data = ele.data();
        if (Object.keys(w.data).some((k) => data[k] !== w.data[k])) ele.data(w.data);
        if (w.classes !== undefined && ele.classes().join(" ") !== w.classes) ele.classes(w.classes);
        if (w.position && !ele.grabbed()) {
          const p = ele.position();
          if (Math.abs(p.x - w.position.x) > 0.01 || Math.abs(p.y - w.position.y) > 0.01) ele.position({ ...w.position });
        }
      });
      if (add.length) {
        cy.add(add.filter((a) => a.group === "nodes"));
        cy.add(add.filter((a) => a.group === "edges"));
      }
      cy.nodes("[?group]").ungrabify();
    });
    if (big() !== drawnBig) {
      // A large graph draws cheaper edges (graph.js's rule): the style is made again only when that changes.
      drawnBig = big();
      cy.style([...F.styles(drawnBig), ...OWN]);
    }
    placeHandle();
  }

  // ---- the view ----
  const fit = (eles) => F.fitTo(cy, eles);

  // The first view: the whole graph, or when it is not readable whole, its start (the left edge) at a readable zoom.
  function fitFirst() {
    fit();
    if (cy.zoom() >= F.READABLE) return;
    cy.zoom(Math.max(F.READABLE, F.ZOOM.min));
    const top = shown().min((n) => n.position("x") * 4 + n.position("y")).ele;
    if (!top) return;
    cy.center(top);
    cy.panBy({ x: MARGIN - shown().renderedBoundingBox(BOX).x1, y: 0 });
  }

  const zoomBy = (factor) => F.zoomAround(cy, factor);

  const shown = () => cy.nodes().filter((n) => n.visible() && !n.data("open"));
  const selectedSteps = () => selectedNodes().filter((n) => !n.data("group")).map((n) => n.id());

  // A node wholly in view, the view moved as little as needed (zoomed to a readable size first when it is not).
  const BOX = { includeLabels: false, includeOverlays: false, includeUnderlays: false };
  const MARGIN = 24; // room for a problem badge and the connecting handle
  function inView(node) {
    if (!node || !node.length) return;
    if (cy.zoom() < F.READABLE) cy.zoom({ level: 1, renderedPosition: node.renderedPosition() });
    const b = node.renderedBoundingBox(BOX);
    const shift = (lo, hi, size) => (hi - lo > size - 2 * MARGIN ? (size - lo - hi) / 2
      : lo < MARGIN ? MARGIN - lo : hi > size - MARGIN ? size - MARGIN - hi : 0);
    const dx = shift(b.x1, b.x2, cy.width());
    const dy = shift(b.y1, b.y2, cy.height());
    if (dx || dy) cy.panBy({ x: dx, y: dy });
  }

  // After the graph changed its shape: a graph that fits at a readable zoom is kept whole in view (fitted again
  // only when a node is cut off); a larger one keeps `node` (the selected or new step) whole in view.
  function keepInView(node) {
    const all = shown();
    if (!all.length || !cy.width() || !cy.height()) return;
    const box = all.boundingBox(BOX);
    const whole = Math.min((cy.width() - 2 * MARGIN) / box.w, (cy.height() - 2 * MARGIN) / box.h);
    if (whole >= F.READABLE) {
      const r = all.renderedBoundingBox(BOX);
      if (r.x1 < MARGIN / 2 || r.y1 < MARGIN / 2 || r.x2 > cy.width() - MARGIN / 2 || r.y2 > cy.height() - MARGIN / 2) fit();
      return;
    }
    inView(node);
  }

  function describeStep(id) {
    const s = steps.get(id);
    if (!s) return "";
    const list = problems[id] || [];
    return "Step " + id + " (" + (s.kind === "agent" ? "agent " + (s.agent || "?") : s.kind) + ")"
      + (list.length ? ", " + list.length + " problem" + (list.length === 1 ? "" : "s") + ": " + list.map((p) => p.message).join("; ") : "");
  }

  function describeEdge(edge) {
    const d = edge.data();
    if (d.bundle) return "These " + d.bundle + " edge" + (d.bundle === 1 ? "" : "s") + " join a folded group: open it to change one.";
    return d.explicit ? "Edge " + d.source + " → " + d.target + " (depends_on): Delete removes it."
      : "Implicit edge " + d.source + " → " + d.target + ", from " + (d.via || "a reference") + " of " + d.target
        + ": it cannot be deleted as an edge; change that field in the inspector.";
  }

  // The status line: a step it names is described again as each outline comes (tell); other news stays (note).
  let told = null;
  function tell(id) { told = id || null; says.textContent = told ? describeStep(told) : ""; }
  function note(text) { told = null; says.textContent = text; }

  // Select a step (opening its folded group), as a click would but without telling onSelect (the page asked).
  function select(id, quiet = true) {
    if (id == null) { cy.elements(":selected").unselect(); tell(null); if (!quiet) call("onSelect", null); placeHandle(); return; }
    const g = groups.find((x) => x.members.includes(id));
    if (g && isFolded(g)) { opened.add(g.members[0]); arrange(true, false); }
    const node = cy.getElementById(id);
    if (!node.length) return;
    cy.elements(":selected").unselect();
    node.select();
    inView(node);
    tell(id);
    if (!quiet) call("onSelect", id);
    placeHandle();
  }

  function move(dx, dy) {
    const all = shown();
    const current = cy.nodes(":selected").filter((n) => n.visible()).first();
    if (!current.length) {
      const start = all.min((n) => n.position("x") * 4 + n.position("y")).ele;
      if (start) choose(start);
      return;
    }
    const best = F.nearest(all, current, dx, dy);
    if (best) choose(best);
  }

  function choose(node) {
    if (node.data("group")) {
      cy.elements(":selected").unselect();
      node.select();
      inView(node);
      note(node.data("label").replace(/\n/g, ", ") + ": Enter " + (node.data("open") ? "folds" : "opens") + " it.");
      return;
    }
    select(node.id(), false);
  }

  function toggle(groupNode) {
    const g = groups.find((x) => groupId(x) === groupNode.id());
    if (!g) return;
    if (isFolded(g)) opened.add(g.members[0]); else opened.delete(g.members[0]);
    arrange(true, false);
    const node = cy.getElementById(groupId(g));
    if (isFolded(g)) { inView(node); return; }
    F.showGroup(cy, g.members, node, cy.getElementById(g.members[0]));
  }

  // ---- gestures: each one op ----
  function remove() {
    if (readOnly) return;
    const edge = cy.edges(":selected").first();
    if (edge.length) {
      if (!edge.data("explicit")) { note(describeEdge(edge)); return; }
      call("onPatch", { op: "edge.remove", from: edge.data("source"), to: edge.data("target") });
      return;
    }
    const ids = selectedSteps();
    if (ids.length === 1) call("onPatch", { op: "step.remove", id: ids[0] });
    else if (ids.length) call("onPatch", { op: "selection.remove", ids });  // one patch: one undo step
  }

  function duplicate() {
    if (readOnly) return;
    const ids = selectedSteps();
    if (ids.length === 1) call("onPatch", { op: "step.duplicate", id: ids[0] });
    else note("Select one step to duplicate it.");
  }

  function copy() {
    const ids = selectedSteps();
    if (ids.length) { call("onCopy", ids); note("Copied " + ids.length + " step" + (ids.length === 1 ? "" : "s") + "."); }
  }

  const act = {
    fit: () => fit(), "zoom-in": () => zoomBy(1.25), "zoom-out": () => zoomBy(0.8),
    delete: remove, duplicate, copy, paste: () => { if (!readOnly) call("onPaste"); },
  };
  tools.addEventListener("click", (e) => {
    const b = e.target.closest("[data-editor-graph]");
    if (b) act[b.dataset.editorGraph]();
  });

  function buttons() {
    if (readOnly) return;
    const ids = selectedSteps();
    const edge = cy.edges(":selected");
    tools.querySelector('[data-editor-graph="delete"]').disabled = !ids.length && !(edge.length && edge.data("explicit"));
    tools.querySelector('[data-editor-graph="duplicate"]').disabled = ids.length !== 1;
    tools.querySelector('[data-editor-graph="copy"]').disabled = !ids.length;
  }

  // Cytoscape keeps the mouse's default from its canvas: a press on the graph gives the graph the keyboard.
  cy.on("tapstart", () => { if (document.activeElement !== canvas) canvas.focus({ preventScroll: true }); });
  cy.on("tap", "node", (e) => {
    const node = e.target;
    if (node.data("group")) { toggle(node); return; }
    if (e.originalEvent && (e.originalEvent.shiftKey || e.originalEvent.ctrlKey || e.originalEvent.metaKey)) return;
    tell(node.id());
    call("onSelect", node.id());
  });
  cy.on("tap", "edge", (e) => { note(describeEdge(e.target)); });
  cy.on("tap", (e) => { if (e.target === cy) { tell(null); call("onSelect", null); } });
  cy.on("select unselect", () => { buttons(); placeHandle(); });

  // A drag places the steps it moved: one onPlace for the steps dropped together.
  let dropped = null;
  cy.on("dragfree", "node", (e) => {
    const node = e.target;
    if (node.data("group")) return;
    const p = node.position();
    pos.set(node.id(), { x: p.x, y: p.y });
    mine[node.id()] = { x: p.x, y: p.y };
    if (!dropped) {
      dropped = {};
      queueMicrotask(() => { const out = dropped; dropped = null; call("onPlace", out); });
    }
    dropped[node.id()] = { x: Math.round(p.x * 10) / 10, y: Math.round(p.y * 10) / 10 };
  });

  // ---- the overlay: problem badges and the connecting handle follow the drawing, once a frame ----
  let framed = 0;
  const follow = () => { if (!framed) framed = requestAnimationFrame(() => { framed = 0; placeBadges(); placeHandle(); }); };
  cy.on("render", follow);

  function badgesNow() {
    const want = Object.keys(problems).filter((id) => steps.has(id) && (problems[id] || []).length);
    badges.forEach((b, id) => { if (!want.includes(id)) { b.remove(); badges.delete(id); } });
    want.forEach((id) => {
      const list = problems[id];
      const b = badges.get(id) || el("span", { className: "editor-graph-badge" });
      b.textContent = String(list.length);
      b.className = "editor-graph-badge editor-graph-badge-" + severityOf(list);
      b.title = list.map((p) => (p.code ? p.code + ": " : "") + p.message).join("\n");
      b.setAttribute("aria-label", id + ": " + list.length + " problem" + (list.length === 1 ? "" : "s") + ": " + b.title);
      b.setAttribute("role", "img");
      if (!badges.has(id)) { badges.set(id, b); layer.append(b); }
    });
    placeBadges();
  }

  function placeBadges() {
    badges.forEach((b, id) => {
      const node = cy.getElementById(id);
      if (!node.length || !node.visible()) { b.hidden = true; return; }
      const box = node.renderedBoundingBox({ includeLabels: false, includeOverlays: false, includeUnderlays: false });
      b.hidden = false;
      b.style.transform = "translate(" + (box.x2 - 10) + "px, " + (box.y1 - 8) + "px)";
    });
  }

  function placeHandle() {
    if (readOnly) return;
    const sel = selectedNodes();
    const node = hover && hover.inside() && hover.visible() && !hover.data("group") ? hover
      : sel.length === 1 && !sel.data("group") ? sel : null;
    if (!node || connecting) { if (!connecting) handle.hidden = true; return; }
    const box = node.renderedBoundingBox({ includeLabels: false, includeOverlays: false, includeUnderlays: false });
    handle.hidden = false;
    handle.dataset.from = node.id();
    handle.setAttribute("aria-label", "Connect from " + node.id() + ": drag onto the step that depends on it");
    handle.title = "Drag onto a step to make it depend on " + node.id();
    handle.style.transform = "translate(" + (box.x2 - 4) + "px, " + ((box.y1 + box.y2) / 2 - 9) + "px)";
  }

  cy.on("mouseover", "node", (e) => { hover = e.target; placeHandle(); });

  // Connecting: drag from a step's handle onto another step; the line follows the pointer.
  let connecting = null;
  handle.addEventListener("pointerdown", (e) => {
    if (readOnly || e.button !== 0) return;
    e.preventDefault();
    const from = handle.dataset.from;
    const node = cy.getElementById(from);
    if (!node.length) return;
    connecting = { from };
    handle.setPointerCapture(e.pointerId);
    const start = node.renderedPosition();
    path.setAttribute("x1", start.x); path.setAttribute("y1", start.y);
    drag(e);
    line.style.display = "";
  });
  const local = (e) => { const r = stage.getBoundingClientRect(); return { x: e.clientX - r.left, y: e.clientY - r.top }; };
  function drag(e) {
    const p = local(e);
    path.setAttribute("x2", p.x); path.setAttribute("y2", p.y);
  }
  handle.addEventListener("pointermove", (e) => { if (connecting) drag(e); });
  function stepAt(point) {
    const z = cy.zoom();
    const pan = cy.pan();
    const m = { x: (point.x - pan.x) / z, y: (point.y - pan.y) / z };
    return shown().filter((n) => !n.data("group")).filter((n) => {
      const b = n.boundingBox({ includeLabels: false, includeOverlays: false, includeUnderlays: false });
      return m.x >= b.x1 && m.x <= b.x2 && m.y >= b.y1 && m.y <= b.y2;
    }).first();
  }
  handle.addEventListener("pointerup", (e) => {
    if (!connecting) return;
    const { from } = connecting;
    connecting = null;
    line.style.display = "none";
    const target = stepAt(local(e));
    if (target && target.length && target.id() !== from) {
      note(target.id() + " now depends on " + from + ".");
      call("onPatch", { op: "edge.add", from, to: target.id() });
    }
    placeHandle();
  });
  handle.addEventListener("pointercancel", () => { connecting = null; line.style.display = "none"; });

  // ---- the keyboard ----
  canvas.addEventListener("keydown", (e) => {
    const ctrl = e.ctrlKey || e.metaKey;
    if (ctrl && !e.altKey && (e.key === "c" || e.key === "C")) { copy(); e.preventDefault(); return; }
    if (ctrl && !e.altKey && (e.key === "v" || e.key === "V")) { if (!readOnly) call("onPaste"); e.preventDefault(); return; }
    if (e.altKey || ctrl) return;
    if (KEYS[e.key]) { move(...KEYS[e.key]); e.preventDefault(); return; }
    if (e.key === "Delete" || e.key === "Backspace") { remove(); e.preventDefault(); return; }
    if (e.key === "Escape") { select(null, false); return; }
    if (e.key === "Enter" || e.key === " ") {
      const node = cy.nodes(":selected").first();
      if (!node.length) return;
      e.preventDefault();
      if (node.data("group")) { toggle(node); return; }
      call("onOpen", node.id());
      document.dispatchEvent(new CustomEvent("forge:inspect", { detail: { id: node.id() } }));
      return;
    }
    const zoom = { "+": () => zoomBy(1.25), "=": () => zoomBy(1.25), "-": () => zoomBy(0.8), 0: () => fit() }[e.key];
    if (zoom) { zoom(); e.preventDefault(); }
  });

  new ResizeObserver(() => { cy.resize(); follow(); }).observe(stage);
  buttons();

  return {
    update, select: (id) => select(id, true), focus: () => canvas.focus(), cy,
    selected: selectedSteps,
  };
}
