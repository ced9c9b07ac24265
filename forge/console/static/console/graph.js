// A workflow version's graph: Cytoscape on positions computed once per version by elkjs in its Web Worker and
// kept on the server by the version's content hash. Until a version has them, the graph is drawn at once
// with a quick layering, then moved. Used by the run view (run.js) and the workflow page (workflow.js).
(function () {
  "use strict";

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
      return [n.id, { x: 60 + layer * 160, y: 22 + (filled[layer] - 1) * 60 }];
    }));
  }

  function elkLayout(nodes, workerUrl) {
    const elk = new window.ELK({ workerUrl });
    return elk.layout({
      id: "root",
      layoutOptions: { "elk.algorithm": "layered", "elk.direction": "RIGHT", "elk.layered.spacing.nodeNodeBetweenLayers": "40",
                       // Positions are all the page takes: straight edge routing and one crossing sweep.
                       "elk.edgeRouting": "POLYLINE", "elk.layered.thoroughness": "1" },
      children: nodes.map((n) => ({ id: n.id, width: 120, height: 44 })),
      edges: nodes.flatMap((n) => n.deps.map((d) => ({ id: d + "->" + n.id, sources: [d], targets: [n.id] }))),
    }).then((laid) => Object.fromEntries(laid.children.map((c) => [c.id, { x: c.x + c.width / 2, y: c.y + c.height / 2 }])));
  }

  function keepLayout(url, positions) {
    // The first page to lay out this version keeps the positions on the server for every page after it.
    const token = document.querySelector("input[name=csrfmiddlewaretoken]")?.value || "";
    fetch(url, {
      method: "POST", credentials: "same-origin", body: JSON.stringify(positions),
      headers: { "Content-Type": "application/json", "X-CSRFToken": token },
    }).catch(() => {});
  }

  // container: the element, with data-elk-worker and data-layout-url; nodes: [{id, deps}]; layout: the stored
  // positions or null; labelOf(node), classOf(node): what each node shows; drawn(), laidOut(): when each happened.
  function draw({ container, nodes, layout, labelOf, classOf, drawn, laidOut }) {
    const stored = layout && nodes.every((n) => layout[n.id]) ? layout : null;
    const positions = stored || quickLayout(nodes);
    const big = nodes.length > 300;
    const cy = window.cytoscape({
      container,
      elements: [
        ...nodes.map((n) => ({ data: { id: n.id, label: labelOf(n) }, position: positions[n.id], classes: classOf(n) })),
        ...nodes.flatMap((n) => n.deps.map((d) => ({ data: { id: d + "->" + n.id, source: d, target: n.id } }))),
      ],
      layout: { name: "preset" },
      // A large graph draws cheaper: straight edges, a bitmap while panning, no label too small to read.
      textureOnViewport: big, hideEdgesOnViewport: big,
      style: [
        { selector: "node", style: { shape: "round-rectangle", width: 120, height: 44, label: "data(label)", "text-wrap": "wrap",
                                     "text-valign": "center", "font-size": 11, "min-zoomed-font-size": 7, "background-color": "#fff", "border-width": 2, "border-color": "#8a96a3" } },
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
      ],
    });
    cy.ready(() => requestAnimationFrame(() => { drawn(); if (stored) laidOut(); }));
    if (!stored) {
      elkLayout(nodes, container.dataset.elkWorker).then((laid) => {
        keepLayout(container.dataset.layoutUrl, laid);
        cy.batch(() => cy.nodes().forEach((n) => n.position(laid[n.id()])));
        cy.fit(undefined, 30);
        requestAnimationFrame(laidOut);
      }).catch(() => {}); // the quick layering stays
    }
    return cy;
  }

  window.forgeGraph = { draw };
})();
