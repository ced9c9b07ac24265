// The inspector: every field of the selected step, as the JSON Schema of the format types it (engine/schema.py,
// served at /editor/schema.json), each checked as it is typed with a message beside it. A field changed and left
// (Enter or leaving it) is one patch: field.set, or field.unset when emptied; the id is a step.rename; the
// explicit depends_on is edited as a list (edge.add / edge.remove, reachable from the keyboard); the implicit
// dependencies are listed read-only with where they come from. Drawn from the outline, never from itself.

const ID = /^[a-z][a-z0-9_]{0,63}$/;
// Fields that belong to one kind of step; the rest belong to every step. A field a step has is always shown.
const KIND_FIELDS = {
  agent: ["agent", "command", "stdin", "agent_config", "mock", "estimated_cost"],
  loop: ["agent", "command", "stdin", "loop", "agent_config", "mock", "estimated_cost"],
  approval: ["approval", "approvers", "approval_message", "on_reject"],
  subworkflow: ["workflow_ref"],
  library: ["library_step"],
};
const OWNED = new Set(Object.values(KIND_FIELDS).flat());
const LONG = new Set(["command", "stdin", "approval_message", "fix_command", "re_review_command", "condition", "until", "description"]);

// ---- the schema ----
function deref(schema, root) {
  let s = schema || {};
  for (let i = 0; s.$ref && i < 20; i += 1) {
    const name = s.$ref.replace(/^#\/(\$defs|definitions)\//, "");
    s = { ...(root.$defs || root.definitions || {})[name], ...Object.fromEntries(Object.entries(s).filter(([k]) => k !== "$ref")) };
  }
  return s;
}

// The step's schema within the document's: $defs.Step, or what `steps` holds, or the schema itself.
export function stepSchema(schema) {
  if (!schema) return null;
  const defs = schema.$defs || schema.definitions || {};
  if (defs.Step) return deref(defs.Step, schema);
  const steps = schema.properties && schema.properties.steps;
  if (steps) {
    const items = deref(steps, schema).items || (deref(steps, schema).anyOf || []).map((a) => deref(a, schema)).find((a) => a.items)?.items;
    if (items) return deref(items, schema);
  }
  return schema.properties && schema.properties.depends_on ? schema : null;
}

// A value's alternatives without null: [schema...] (optional when null was one of them).
function options(s, root) {
  const d = deref(s, root);
  const alts = d.anyOf || d.oneOf;
  if (!alts) return [d];
  return alts.map((a) => deref(a, root)).filter((a) => a.type !== "null");
}

const typeOk = (value, type) => {
  if (Array.isArray(type)) return type.some((t) => typeOk(value, t));
  switch (type) {
    case "string": return typeof value === "string";
    case "integer": return Number.isInteger(value);
    case "number": return typeof value === "number" && Number.isFinite(value);
    case "boolean": return typeof value === "boolean";
    case "array": return Array.isArray(value);
    case "object": return value !== null && typeof value === "object" && !Array.isArray(value);
    case "null": return value === null;
    default: return true;
  }
};

// What is wrong with `value` against `schema` (the subset pydantic writes), or "" when nothing.
export function check(value, schema, root, depth = 0) {
  if (depth > 30) return "";
  const s = deref(schema, root);
  if (s.anyOf || s.oneOf) {
    const alts = (s.anyOf || s.oneOf).map((a) => check(value, a, root, depth + 1));
    return alts.some((m) => m === "") ? "" : alts.find((m) => !m.startsWith("must be a")) || alts[0];
  }
  if (s.const !== undefined && value !== s.const) return "must be " + JSON.stringify(s.const);
  if (s.enum && !s.enum.some((e) => e === value)) return "must be one of " + s.enum.map((e) => JSON.stringify(e)).join(", ");
  if (s.type && !typeOk(value, s.type)) return "must be a" + (/^[aeiou]/.test(String(s.type)) ? "n " : " ") + [].concat(s.type).join(" or ");
  if (typeof value === "number") {
    if (s.minimum !== undefined && value < s.minimum) return "must be at least " + s.minimum;
    if (s.maximum !== undefined && value > s.maximum) return "must be at most " + s.maximum;
    if (s.exclusiveMinimum !== undefined && value <= s.exclusiveMinimum) return "must be more than " + s.exclusiveMinimum;
    if (s.exclusiveMaximum !== undefined && value >= s.exclusiveMaximum) return "must be less than " + s.exclusiveMaximum;
  }
  if (typeof value === "string") {
    if (s.minLength !== undefined && value.length < s.minLength) return "must have at least " + s.minLength + " character" + (s.minLength === 1 ? "" : "s");
    if (s.maxLength !== undefined && value.length > s.maxLength) return "must have at most " + s.maxLength + " characters";
    if (s.pattern) { try { if (!new RegExp(s.pattern, "u").test(value)) return "must match " + s.pattern; } catch (e) { /* a pattern JavaScript cannot read is the server's to check */ } }
  }
  if (Array.isArray(value)) {
    if (s.minItems !== undefined && value.length < s.minItems) return "must have at least " + s.minItems + " item" + (s.minItems === 1 ? "" : "s");
    if (s.maxItems !== undefined && value.length > s.maxItems) return "must have at most " + s.maxItems + " items";
    if (s.items) for (let i = 0; i < value.length; i += 1) { const m = check(value[i], s.items, root, depth + 1); if (m) return "item " + (i + 1) + " " + m; }
  }
  if (typeOk(value, "object")) {
    for (const k of s.required || []) if (!(k in value)) return "needs " + k;
    for (const [k, v] of Object.entries(value)) {
      const sub = (s.properties || {})[k];
      if (sub) { const m = check(v, sub, root, depth + 1); if (m) return k + " " + m; }
      else if (s.additionalProperties === false) return "has no field " + k;
      else if (s.additionalProperties && typeof s.additionalProperties === "object") { const m = check(v, s.additionalProperties, root, depth + 1); if (m) return k + " " + m; }
    }
  }
  return "";
}

// Which widget a field gets: "object" (nested fields), "enum", "boolean", "number", "integer", "lines" (a list
// of strings, one a line), "text", "any" (a number or a text), "mixed" (a text, or JSON when it starts with { or
// [) or "json".
function widgetOf(s, root) {
  const alts = options(s, root);
  if (alts.length !== 1) {
    if (alts.every((a) => a.type === "string" || a.const !== undefined || a.enum)) return "text";
    return alts.some((a) => a.type === "string") ? "mixed" : "json"; // e.g. workflow_ref: a name or a mapping
  }
  const a = alts[0];
  if (a.enum || a.const !== undefined) return "enum";
  if (a.type === "boolean") return "boolean";
  if (a.type === "integer" || a.type === "number") return a.type;
  if (a.type === "string") return "text";
  if (a.type === "array") return deref(a.items || {}, root).type === "string" ? "lines" : "json";
  if (a.type === "object" && a.properties && a.additionalProperties === false) return "object";
  if (!a.type && !a.properties) return "any";
  return "json";
}

const words = (key) => key.replace(/_/g, " ");
let serial = 0;

function el(tag, props = {}, ...children) {
  const node = document.createElement(tag);
  Object.entries(props).forEach(([k, v]) => {
    if (k.startsWith("aria-") || k === "role" || k.startsWith("data-") || k === "for" || k === "list") node.setAttribute(k, v);
    else node[k] = v;
  });
  node.append(...children);
  return node;
}

export function createInspector(container, opts = {}) {
  const { schema, readOnly = false } = opts;
  const call = (name, ...args) => (typeof opts[name] === "function" ? opts[name](...args) : undefined);
  const root = schema || {};
  const step = stepSchema(schema);
  container.classList.add("inspector");
  let current = null; // the step shown

  // ---- one field ----
  function field(key, s, path, value, id) {
    const kind = widgetOf(s, root);
    const uid = "insp-" + (serial += 1);
    const label = el("label", { for: uid, textContent: words(key) });
    const msg = el("span", { className: "inspector-message", id: uid + "-msg", role: "alert" });
    const d = deref(s, root);
    const help = d.description || options(s, root)[0]?.description || "";
    if (kind === "object") {
      const box = el("fieldset", { className: "inspector-object" }, el("legend", { textContent: words(key) }));
      const sub = options(s, root)[0];
      const v = value && typeof value === "object" ? value : {};
      Object.entries(sub.properties || {}).forEach(([k, ss]) => box.append(field(k, ss, [...path, k], v[k], id)));
      if (value !== undefined && !readOnly) {
        const drop = el("button", { type: "button", textContent: "Remove " + words(key), "aria-label": "Remove " + path.join(".") });
        drop.addEventListener("click", () => call("onPatch", { op: "field.unset", id, path }));
        box.append(drop);
      }
      return box;
    }
    let input;
    let read; // the input's value as JSON, or undefined when empty; throws a message when it cannot be read
    if (kind === "enum" || kind === "boolean") {
      const choices = kind === "boolean" ? [true, false] : options(s, root).flatMap((a) => a.enum || [a.const]);
      input = el("select", { id: uid }, el("option", { value: "", textContent: "— not set —" }),
        ...choices.map((c, i) => el("option", { value: String(i), textContent: String(c) })));
      const at = choices.findIndex((c) => c === value);
      input.value = at < 0 ? "" : String(at);
      if (value !== undefined && at < 0) input.append(el("option", { value: "keep", textContent: JSON.stringify(value), selected: true }));
      read = () => (input.value === "" ? undefined : input.value === "keep" ? value : choices[Number(input.value)]);
    } else if (kind === "lines" || kind === "json" || LONG.has(key) || (typeof value === "string" && value.includes("\n"))) {
      input = el("textarea", { id: uid, rows: kind === "json" ? 4 : 3, spellcheck: false });
      if (kind === "lines") {
        input.value = Array.isArray(value) ? value.map(String).join("\n") : "";
        read = () => { const list = input.value.split("\n").map((x) => x.trim()).filter(Boolean); return list.length ? list : undefined; };
      } else if (kind === "json") {
        input.value = value === undefined ? "" : JSON.stringify(value, null, 1);
        read = () => { if (!input.value.trim()) return undefined; try { return JSON.parse(input.value); } catch (e) { throw new Error("is not JSON: " + e.message); } };
      } else {
        input.value = value === undefined || value === null ? "" : String(value);
        read = () => (input.value === "" ? undefined : input.value);
      }
    } else {
      input = el("input", { id: uid, type: "text", spellcheck: false });
      input.value = value === undefined || value === null ? "" : typeof value === "object" ? JSON.stringify(value) : String(value);
      if (kind === "integer" || kind === "number") input.inputMode = "decimal";
      read = () => {
        const text = input.value.trim();
        if (text === "") return undefined;
        if (kind === "integer" || kind === "number") {
          const n = Number(text);
          if (!Number.isFinite(n)) throw new Error("must be a number");
          return n;
        }
        if (kind === "any") return /^-?\d+(\.\d+)?$/.test(text) ? Number(text) : text;
        if (kind === "mixed" && /^[[{]/.test(text)) { try { return JSON.parse(text); } catch (e) { throw new Error("is not JSON: " + e.message); } }
        return input.value;
      };
    }
    input.setAttribute("aria-describedby", uid + "-msg");
    input.dataset.path = path.join(".");
    input.disabled = readOnly;
    if (help) input.title = help;
    const verdict = () => {
      try {
        const v = read();
        if (v === undefined) return { v, m: "" };
        return { v, m: check(v, s, root) };
      } catch (e) { return { v: undefined, m: e.message }; }
    };
    const showVerdict = () => {
      const { m } = verdict();
      msg.textContent = m ? words(key) + " " + m : "";
      input.setAttribute("aria-invalid", m ? "true" : "false");
      return m;
    };
    input.addEventListener("input", showVerdict);
    // `value` becomes what was sent: Enter and then leaving the field (its change event) are one patch.
    const commit = () => {
      if (readOnly || showVerdict()) return;
      const { v } = verdict();
      if (JSON.stringify(v) === JSON.stringify(value)) return;
      value = v;
      call("onPatch", v === undefined ? { op: "field.unset", id, path } : { op: "field.set", id, path, value: v });
    };
    input.addEventListener("change", commit);
    if (input.tagName === "INPUT") input.addEventListener("keydown", (e) => { if (e.key === "Enter") { e.preventDefault(); commit(); } });
    return el("div", { className: "inspector-field" }, label, input, msg);
  }

  // ---- the id, depends_on and the implicit dependencies ----
  function idField(s, outline) {
    const uid = "insp-" + (serial += 1);
    const input = el("input", { id: uid, type: "text", value: s.id, spellcheck: false, "aria-describedby": uid + "-msg", "data-path": "id" });
    input.disabled = readOnly;
    const msg = el("span", { className: "inspector-message", id: uid + "-msg", role: "alert" });
    const taken = new Set(outline.steps.map((x) => x.id));
    const verdict = () => (input.value === s.id ? "" : !ID.test(input.value) ? "an id is a lower-case letter, then lower-case letters, digits or _ (64 at most)"
      : taken.has(input.value) ? "another step is called " + input.value : "");
    input.addEventListener("input", () => { msg.textContent = verdict(); input.setAttribute("aria-invalid", verdict() ? "true" : "false"); });
    // Enter and then leaving the field (its change event) are one rename: the id asked for is sent once.
    let sent = s.id;
    const commit = () => {
      if (readOnly || verdict() || input.value === s.id || input.value === sent) return;
      sent = input.value;
      call("onPatch", { op: "step.rename", id: s.id, to: input.value });
    };
    input.addEventListener("change", commit);
    input.addEventListener("keydown", (e) => { if (e.key === "Enter") { e.preventDefault(); commit(); } });
    return el("div", { className: "inspector-field" }, el("label", { for: uid, textContent: "id" }), input, msg);
  }

  function dependsField(s, outline) {
    const explicit = Array.isArray(s.fields?.depends_on) ? s.fields.depends_on.filter((d) => typeof d === "string") : [];
    const box = el("fieldset", { className: "inspector-depends" }, el("legend", { textContent: "depends on" }));
    const list = el("ul", { className: "inspector-list" });
    explicit.forEach((d) => {
      const go = el("button", { type: "button", className: "inspector-link", textContent: d, "aria-label": "Go to step " + d });
      go.addEventListener("click", () => call("onSelect", d));
      const item = el("li", {}, go);
      if (!readOnly) {
        const drop = el("button", { type: "button", textContent: "Remove", "aria-label": "Remove the dependency on " + d });
        drop.addEventListener("click", () => call("onPatch", { op: "edge.remove", from: d, to: s.id }));
        item.append(" ", drop);
      }
      list.append(item);
    });
    if (!explicit.length) list.append(el("li", { className: "muted", textContent: "nothing explicit" }));
    box.append(list);
    if (!readOnly) {
      const uid = "insp-" + (serial += 1);
      const input = el("input", { id: uid, type: "text", list: uid + "-ids", spellcheck: false, "aria-describedby": uid + "-msg", "data-path": "depends_on" });
      // The other steps' ids to choose from, listed when the field is first used: the form is drawn again as the
      // step changes (twice a second while its YAML is typed), and a 1,000-step workflow's list is 1,000 elements.
      const ids = el("datalist", { id: uid + "-ids" });
      const offer = () => {
        if (ids.childElementCount) return;
        const others = outline.steps.map((x) => x.id).filter((x) => x !== s.id && !explicit.includes(x));
        ids.append(...others.map((x) => el("option", { value: x })));
      };
      input.addEventListener("focus", offer);
      input.addEventListener("pointerdown", offer);
      const msg = el("span", { className: "inspector-message", id: uid + "-msg", role: "alert" });
      const add = el("button", { type: "button", textContent: "Add", "aria-label": "Add the dependency named in the field" });
      const verdict = () => (!input.value ? "" : input.value === s.id ? "a step cannot depend on itself"
        : !outline.steps.some((x) => x.id === input.value) ? "no step is called " + input.value
          : explicit.includes(input.value) ? "already a dependency" : "");
      input.addEventListener("input", () => { msg.textContent = verdict(); input.setAttribute("aria-invalid", verdict() ? "true" : "false"); });
      const commit = () => {
        if (!input.value || verdict()) { msg.textContent = verdict() || "name a step"; return; }
        call("onPatch", { op: "edge.add", from: input.value, to: s.id });
        input.value = "";
      };
      input.addEventListener("keydown", (e) => { if (e.key === "Enter") { e.preventDefault(); commit(); } });
      add.addEventListener("click", commit);
      box.append(el("div", { className: "inspector-field" }, el("label", { for: uid, textContent: "Add a dependency (step id)" }), input, ids, add, msg));
    }
    const implicit = (outline.edges || []).filter((e) => e.to === s.id && !e.explicit);
    if (implicit.length) {
      box.append(el("p", { className: "inspector-note", textContent: "Implicit (change the field they come from to remove them):" }),
        el("ul", { className: "inspector-list inspector-implicit" },
          ...implicit.map((e) => el("li", { textContent: e.from + " — via " + (e.via || []).join(", ") }))));
    }
    return box;
  }

  let shown = null; // what the form was drawn from: the same again draws nothing (a half-typed field stays)
  function show(s, outline, problems) {
    current = s;
    if (!s) {
      if (shown === "") return; // the hint is shown already
      shown = "";
      container.replaceChildren(el("p", { className: "muted", textContent: "Select a step on the graph to see its fields here." }));
      return;
    }
    outline = outline || { steps: [s], edges: [] };
    const key = JSON.stringify([s.id, s.kind, s.agent, s.fields, (outline.edges || []).filter((e) => e.to === s.id),
                                (outline.steps || []).map((x) => x.id), problems || []]);
    if (key === shown) return;
    shown = key;
    // The field the keyboard was in is the one it is in after the form is drawn again (a rename keeps "id").
    const was = container.contains(document.activeElement) ? document.activeElement.dataset.path : null;
    const fields = s.fields || {};
    const head = el("h2", { className: "inspector-title", textContent: "Step " + s.id + " (" + (s.kind === "agent" ? "agent " + (s.agent || "?") : s.kind) + ")" });
    const form = el("form", { className: "inspector-form", "aria-label": "Fields of step " + s.id });
    form.addEventListener("submit", (e) => e.preventDefault());
    const list = (problems || []).filter(Boolean);
    if (list.length) {
      form.append(el("ul", { className: "inspector-problems", "aria-label": "Problems of this step" },
        ...list.map((p) => el("li", { className: "inspector-problem-" + (p.severity || "error"), textContent: (p.code ? p.code + ": " : "") + p.message }))));
    }
    form.append(idField(s, outline), dependsField(s, outline));
    const props = step ? step.properties || {} : {};
    const mineOnly = KIND_FIELDS[s.kind] || [];
    Object.entries(props).forEach(([key, ss]) => {
      if (key === "id" || key === "depends_on") return;
      if (OWNED.has(key) && !mineOnly.includes(key) && fields[key] === undefined) return;
      form.append(field(key, ss, [key], fields[key], s.id));
    });
    if (!step) form.append(el("p", { className: "muted", textContent: "The format's schema is not loaded: only the id and dependencies can be edited." }));
    container.replaceChildren(head, form);
    if (was) [...form.querySelectorAll("[data-path]")].find((x) => x.dataset.path === was)?.focus();
  }

  // Enter on a graph's step: the inspector takes the keyboard.
  document.addEventListener("forge:inspect", (e) => {
    if (current && e.detail && e.detail.id === current.id) container.querySelector("input, select, textarea, button")?.focus();
  });
  show(null);
  return { show, focus: () => container.querySelector("input, select, textarea, button")?.focus() };
}
