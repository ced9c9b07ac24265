// A workflow page's graph: the latest version's steps, drawn by graph.js.
(function () {
  "use strict";
  const holder = document.getElementById("workflow-graph");
  if (!holder || !window.cytoscape || !window.ELK || !window.forgeGraph) return;
  const data = JSON.parse(holder.textContent);
  const page = (window.forgeWorkflow = { drawnAt: null });
  window.forgeGraph.draw({
    container: document.getElementById("graph"), nodes: data.nodes, layout: data.layout, placements: data.placements,
    labelOf: (n) => n.id + (n.kind !== "agent" ? "\n(" + n.kind + ")" : ""), classOf: () => "",
    drawn: () => { page.drawnAt = performance.now(); }, laidOut: () => {},
  });
})();
