// Which steps of a graph fold into one node. One rule: a group of more than COLLAPSE_OVER steps folds, the group
// being a fan-out (steps with the same upstream and the same downstream), parallel chains (chains that all start
// after the same steps and end before the same steps: ten lanes of 20 read as one block) or one chain (steps one
// after another, each with one upstream and one downstream). Pure functions of the workflow's shape, used by
// graph.js.
(function () {
  "use strict";
  const COLLAPSE_OVER = 20;

  // nodes: [{id, deps}] in document order. Returns [{id, members: [step ids], kind, chains}], no step in two groups.
  function find(nodes, over = COLLAPSE_OVER) {
    const downstream = new Map(nodes.map((n) => [n.id, []]));
    nodes.forEach((n) => n.deps.forEach((d) => downstream.get(d)?.push(n.id)));
    const ends = (ups, downs) => [...ups].sort().join("\u0000") + "\u0001" + [...downs].sort().join("\u0000");
    const groups = [];
    const taken = new Set();
    const siblings = new Map();
    for (const n of nodes) {
      const key = ends(n.deps, downstream.get(n.id));
      if (!siblings.has(key)) siblings.set(key, []);
      siblings.get(key).push(n.id);
    }
    for (const members of siblings.values()) {
      if (members.length > over) { groups.push({ members, kind: "fan-out" }); members.forEach((id) => taken.add(id)); }
    }
    const byId = new Map(nodes.map((n) => [n.id, n]));
    const link = (id) => !taken.has(id) && byId.get(id).deps.length === 1 && downstream.get(id).length === 1;
    const chains = [];
    for (const n of nodes) {
      if (!link(n.id) || link(n.deps[0])) continue; // not the first link of a chain
      const members = [n.id];
      for (let next = downstream.get(n.id)[0]; link(next); next = downstream.get(next)[0]) members.push(next);
      chains.push(members);
    }
    // Chains between the same two steps: together, when there are several and more than `over` steps in all.
    const lanes = new Map();
    for (const members of chains) {
      const key = ends(byId.get(members[0]).deps, downstream.get(members[members.length - 1]));
      if (!lanes.has(key)) lanes.set(key, []);
      lanes.get(key).push(members);
    }
    for (const set of lanes.values()) {
      const members = set.flat();
      if (set.length > 1 && members.length > over) groups.push({ members, kind: "chains", chains: set.length });
      else set.forEach((one) => { if (one.length > over) groups.push({ members: one, kind: "chain" }); });
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
