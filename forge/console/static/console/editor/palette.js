// The palette: one button a kind of step (one per agent the console knows, from the schema's
// x-forge.completions.agents; an approval, a sub-workflow, a library step, a loop). A click is one step.add
// with a fresh id, after the selected step (or at the end).

// A new id for `base` that no step has: base_1, base_2, ...
export function freshId(base, ids) {
  const stem = (String(base).toLowerCase().replace(/[^a-z0-9_]+/g, "_").replace(/^[^a-z]+/, "") || "step").slice(0, 56);
  const taken = new Set(ids);
  for (let n = 1; ; n += 1) if (!taken.has(stem + "_" + n)) return stem + "_" + n;
}

// What each button adds: [{key, text, label, base, fields}]. An agent step starts with its agent and an empty
// command, which validation asks to be filled.
export function kinds(schema) {
  const completions = (schema && schema["x-forge"] && schema["x-forge"].completions) || {};
  const agentName = (a) => (typeof a === "string" ? a : a && typeof a.name === "string" ? a.name : "");
  const agents = (completions.agents || []).map(agentName).filter(Boolean);
  const library = (completions.library || []).map(agentName).filter(Boolean);
  const first = agents[0] || "shell";
  return [
    ...agents.map((a) => ({ key: "agent:" + a, text: a, label: "Add a step run by the agent " + a, base: a, fields: { agent: a, command: "" } })),
    { key: "approval", text: "Approval", label: "Add an approval step", base: "approval", fields: { approval: "required" } },
    { key: "subworkflow", text: "Sub-workflow", label: "Add a step that runs another workflow", base: "subworkflow", fields: { workflow_ref: "" } },
    { key: "library", text: "Library step", label: "Add a step from the step library", base: library[0] || "library", fields: { library_step: library[0] || "" } },
    { key: "loop", text: "Loop", label: "Add a loop step (run by " + first + ")", base: "loop", fields: { agent: first, command: "", loop: { max_iterations: 3 } } },
  ];
}

export function createPalette(container, opts = {}) {
  const call = (name, ...args) => (typeof opts[name] === "function" ? opts[name](...args) : undefined);
  let ids = [];
  let after = null;
  const group = document.createElement("div");
  group.className = "palette";
  group.setAttribute("role", "group");
  group.setAttribute("aria-label", "Add a step");
  const title = document.createElement("span");
  title.className = "palette-title";
  title.textContent = "Add:";
  group.append(title);
  const list = kinds(opts.schema);
  list.forEach((k) => {
    const b = document.createElement("button");
    b.type = "button";
    b.textContent = k.text;
    b.dataset.kind = k.key;
    b.setAttribute("aria-label", k.label);
    b.disabled = !!opts.readOnly;
    b.addEventListener("click", () => {
      const id = freshId(k.base, ids);
      ids = [...ids, id]; // two clicks before the outline comes back still get two ids
      call("onPatch", { op: "step.add", step: { id, ...structuredClone(k.fields) }, after });
    });
    group.append(b);
  });
  container.replaceChildren(group);
  return {
    // The outline's ids (for fresh ids) and the selected step (where a new one goes).
    update(outline, selected) {
      ids = (outline && Array.isArray(outline.steps) ? outline.steps : []).map((s) => s.id);
      after = selected && ids.includes(selected) ? selected : null;
    },
  };
}
