// Which steps of a graph fold into one node: a fan-out (steps with the same upstream and the same downstream)
// or a chain (steps one after another, each with one upstream and one downstream) of more than COLLAPSE_OVER
// steps. Pure functions of the workflow's shape, used by graph.js.
(function () {
  "use strict";
  const COLLAPSE_OVER = 20;

  // nodes: [{id, deps}] in document order. Returns [{id, members: [step ids], kind}], no step in two groups.
  function find(nodes, over = COLLAPSE_OVER) {
    const downstream = new Map(nodes.map((n) => [n.id, []]));
    nodes.forEach((n) => n.deps.forEach((d) => downstream.get(d)?.push(n.id)));
    const groups = [];
    const taken = new Set();
    const siblings = new Map();
    for (const n of nodes) {
      const key = [...n.deps].sort().join("\u0000") + "\u0001" + [...downstream.get(n.id)].sort().join("\u0000");
      if (!siblings.has(key)) siblings.set(key, []);
      siblings.get(key).push(n.id);
    }
    for (const members of siblings.values()) {
      if (members.length > over) { groups.push({ members, kind: "fan-out" }); members.forEach((id) => taken.add(id)); }
    }
    const byId = new Map(nodes.map((n) => [n.id, n]));
    const link = (id) => !taken.has(id) && byId.get(id).deps.length === 1 && downstream.get(id).length === 1;
    for (const n of nodes) {
      if (!link(n.id) || link(n.deps[0])) continue; // not the first link of a chain
      const members = [n.id];
      for (let next = downstream.get(n.id)[0]; link(next); next = downstream.get(next)[0]) members.push(next);
      if (members.length > over) groups.push({ members, kind: "chain" });
    }
    const ids = new Set(nodes.map((n) => n.id));
    groups.forEach((g, i) => {
      g.id = "group:" + i;
      while (ids.has(g.id)) g.id = "_" + g.id; // a step may be called anything
    });
    return groups;
  }

  // The graph as drawn when `collapsed` groups are folded: their members replaced by the group's node.
  function condense(nodes, groups, collapsed) {
    const into = new Map();
    groups.filter((g) => collapsed.has(g.id)).forEach((g) => g.members.forEach((id) => into.set(id, g.id)));
    const out = [];
    const proxies = new Map();
    for (const n of nodes) {
      const self = into.get(n.id) || n.id;
      const deps = n.deps.map((d) => into.get(d) || d).filter((d) => d !== self);
      if (self === n.id) { out.push({ id: n.id, deps: [...new Set(deps)] }); continue; }
      if (!proxies.has(self)) { proxies.set(self, { id: self, deps: [], proxy: true }); out.push(proxies.get(self)); }
      const proxy = proxies.get(self);
      proxy.deps = [...new Set([...proxy.deps, ...deps])];
    }
    return out;
  }

  window.forgeGraphGroups = { find, condense, COLLAPSE_OVER };
})();
