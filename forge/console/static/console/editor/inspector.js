// The inspector: every field of the selected step, as the JSON Schema of the format types it (engine/schema.py,
// served at /editor/schema.json), each checked as it is typed with a message beside it. A field changed and left
// (Enter or leaving it) is one patch: field.set, or field.unset when emptied; the id is a step.rename; the
// explicit depends_on is edited as a list (edge.add / edge.remove, reachable from the keyboard); the implicit
// dependencies are listed read-only with where they come from. Drawn from the outline, never from itself, except
// what is being typed: a new outline keeps the fields typed in and not yet in the text (and the keyboard's place).

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

const short = (text) => JSON.stringify(text.length > 60 ? text.slice(0, 57) + "…" : text);

// `onPatch(op)` may answer (or promise) `{ refused: message }` when the server refuses the patch: the field that
// asked shows the message, and goes back to the text's value when it is left or Escape is pressed.
export function createInspector(container, opts = {}) {
  const { schema, readOnly = false } = opts;
  const call = (name, ...args) => (typeof opts[name] === "function" ? opts[name](...args) : undefined);
  const root = schema || {};
  const step = stepSchema(schema);
  container.classList.add("inspector");
  let current = null; // the step shown
  let outlineIds = []; // the step ids of the outline shown
  let controls = new Map(); // data-path -> the control of each editable field of the form shown
  let notice = null; // { text, for: the step id shown when it was said }: what became of typing the text dropped

  // The one polite live region: a field's verdict as it changes (fine -> a problem, a problem -> fine), the
  // server's refusals and the notices; never each key's check (each field's message is its aria-describedby).
  const live = el("p", { className: "inspector-live", "aria-live": "polite" });
  const announce = (text) => { live.textContent = live.textContent === text ? text + "\u00a0" : text; };
  const body = el("div", { className: "inspector-body" }); // what is drawn again; the live region stays
  container.replaceChildren(live, body);

  // A patch asked for; `refused(message)` when the server says no.
  function send(op, refused) {
    const answer = call("onPatch", op);
    if (answer && typeof answer.then === "function") {
      answer.then((a) => { if (a && typeof a.refused === "string") refused(a.refused); }, () => {});
    } else if (answer && typeof answer.refused === "string") refused(answer.refused);
  }

  // ---- one editable field: its message, its verdict as typed, one patch when committed (Enter, or leaving it
  // when `onChange`), the server's refusal, and the text's value (`drawn`) it goes back to ----
  function control(input, name, path, drawn, { check, patch, after, onChange = true, empty = "", refused = null }) {
    const no = refused || ((typed) => (typed ? name + " not changed to " + short(typed) : name + " not emptied"));
    const msg = el("span", { className: "inspector-message", id: input.id + "-msg" });
    input.setAttribute("aria-describedby", msg.id);
    input.dataset.path = path;
    input.disabled = readOnly;
    input.value = drawn;
    const stepId = current.id;
    const ctl = { input, msg, drawn, bad: false, refusal: null, sent: null };
    // `m` beside the field; a change of verdict is announced unless `quiet`.
    ctl.say = (m, quiet = false) => {
      msg.textContent = m;
      const wrong = Boolean(m) && !(ctl.refusal && input.value === drawn && msg.textContent === ctl.refusal.message);
      input.setAttribute("aria-invalid", wrong ? "true" : "false");
      if (!quiet && Boolean(m) !== ctl.bad) announce(m || name + ": fine");
      ctl.bad = Boolean(m);
    };
    ctl.back = () => { input.value = drawn; ctl.say(ctl.refusal ? ctl.refusal.message : check(), true); };
    ctl.refuse = (typed, message) => {
      ctl.refusal = { typed, message: no(typed) + ": " + message };
      ctl.bad = true;
      if (document.activeElement !== input && input.value === typed) input.value = drawn;
      ctl.say(ctl.refusal.message, true);
      announce(ctl.refusal.message);
    };
    ctl.commit = () => {
      if (readOnly || ctl.retired) return;
      if (!input.value && empty) return ctl.say(empty);
      const m = check();
      if (m) return ctl.say(m);
      if (input.value === ctl.sent) return;
      const op = patch();
      if (!op) return;
      const typed = (ctl.sent = input.value);
      notice = null;
      send(op, (message) => {
        const now = controls.get(path);
        if (current && current.id === stepId && now) now.refuse(typed, message);
        else announce(name + " of step " + stepId + " not changed: " + message);
      });
      after?.();
    };
    input.addEventListener("input", () => { ctl.refusal = null; ctl.sent = null; ctl.say(check()); });
    if (onChange) input.addEventListener("change", ctl.commit);
    input.addEventListener("keydown", (e) => {
      if (e.key === "Enter" && input.tagName === "INPUT") { e.preventDefault(); ctl.commit(); }
      if (e.key === "Escape" && input.value !== drawn) { e.preventDefault(); ctl.back(); }
    });
    // A refused value is the field's only while it is being corrected. (A field drawn over is retired: Chromium
    // sends its blur and change as it is taken out, and what it held is the new field's now.)
    input.addEventListener("blur", () => { if (!ctl.retired && ctl.refusal && input.value === ctl.refusal.typed) ctl.back(); });
    controls.set(path, ctl);
    return ctl;
  }

  // ---- one field of the schema ----
  function field(key, s, path, value, id) {
    const kind = widgetOf(s, root);
    const uid = "insp-" + (serial += 1);
    const label = el("label", { for: uid, textContent: words(key) });
    const d = deref(s, root);
    const help = d.description || options(s, root)[0]?.description || "";
    if (kind === "object") {
      const box = el("fieldset", { className: "inspector-object" }, el("legend", { textContent: words(key) }));
      const sub = options(s, root)[0];
      const v = value && typeof value === "object" ? value : {};
      Object.entries(sub.properties || {}).forEach(([k, ss]) => box.append(field(k, ss, [...path, k], v[k], id)));
      if (value !== undefined && !readOnly) {
        const drop = el("button", { type: "button", textContent: "Remove " + words(key), "aria-label": "Remove " + path.join(".") });
        drop.addEventListener("click", () => send({ op: "field.unset", id, path }, (m) => announce(words(key) + " not removed: " + m)));
        box.append(drop);
      }
      return box;
    }
    let input;
    let drawn;
    let read; // the input's value as JSON, or undefined when empty; throws a message when it cannot be read
    if (kind === "enum" || kind === "boolean") {
      const choices = kind === "boolean" ? [true, false] : options(s, root).flatMap((a) => a.enum || [a.const]);
      input = el("select", { id: uid }, el("option", { value: "", textContent: "— not set —" }),
        ...choices.map((c, i) => el("option", { value: String(i), textContent: String(c) })));
      const at = choices.findIndex((c) => c === value);
      drawn = at < 0 ? "" : String(at);
      if (value !== undefined && at < 0) { input.append(el("option", { value: "keep", textContent: JSON.stringify(value) })); drawn = "keep"; }
      read = () => (input.value === "" ? undefined : input.value === "keep" ? value : choices[Number(input.value)]);
    } else if (kind === "lines" || kind === "json" || LONG.has(key) || (typeof value === "string" && value.includes("\n"))) {
      input = el("textarea", { id: uid, rows: kind === "json" ? 4 : 3, spellcheck: false });
      if (kind === "lines") {
        drawn = Array.isArray(value) ? value.map(String).join("\n") : "";
        read = () => { const list = input.value.split("\n").map((x) => x.trim()).filter(Boolean); return list.length ? list : undefined; };
      } else if (kind === "json") {
        drawn = value === undefined ? "" : JSON.stringify(value, null, 1);
        read = () => { if (!input.value.trim()) return undefined; try { return JSON.parse(input.value); } catch (e) { throw new Error("is not JSON: " + e.message); } };
      } else {
        drawn = value === undefined || value === null ? "" : String(value);
        read = () => (input.value === "" ? undefined : input.value);
      }
    } else {
      input = el("input", { id: uid, type: "text", spellcheck: false });
      drawn = value === undefined || value === null ? "" : typeof value === "object" ? JSON.stringify(value) : String(value);
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
    if (help) input.title = help;
    const verdict = () => {
      try {
        const v = read();
        return { v, m: v === undefined ? "" : check(v, s, root) };
      } catch (e) { return { v: undefined, m: e.message }; }
    };
    const ctl = control(input, words(path.join(" ")), path.join("."), drawn, {
      check: () => { const { m } = verdict(); return m ? words(key) + " " + m : ""; },
      patch: () => {
        const { v } = verdict();
        if (JSON.stringify(v) === JSON.stringify(value)) return null;
        return v === undefined ? { op: "field.unset", id, path } : { op: "field.set", id, path, value: v };
      },
    });
    return el("div", { className: "inspector-field" }, label, input, ctl.msg);
  }

  // ---- the id, depends_on and the implicit dependencies ----
  function idField(s, outline) {
    const uid = "insp-" + (serial += 1);
    const input = el("input", { id: uid, type: "text", spellcheck: false });
    const taken = new Set(outline.steps.map((x) => x.id));
    const ctl = control(input, "id", "id", s.id, {
      check: () => (input.value === s.id ? "" : !ID.test(input.value) ? "an id is a lower-case letter, then lower-case letters, digits or _ (64 at most)"
        : taken.has(input.value) ? "another step is called " + input.value : ""),
      patch: () => (input.value === s.id ? null : { op: "step.rename", id: s.id, to: input.value }),
    });
    return el("div", { className: "inspector-field" }, el("label", { for: uid, textContent: "id" }), input, ctl.msg);
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
        drop.addEventListener("click", () => send({ op: "edge.remove", from: d, to: s.id }, (m) => announce("The dependency on " + d + " was not removed: " + m)));
        item.append(" ", drop);
      }
      list.append(item);
    });
    if (!explicit.length) list.append(el("li", { className: "muted", textContent: "nothing explicit" }));
    box.append(list);
    if (!readOnly) {
      const uid = "insp-" + (serial += 1);
      const input = el("input", { id: uid, type: "text", list: uid + "-ids", spellcheck: false });
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
      const add = el("button", { type: "button", textContent: "Add", "aria-label": "Add the dependency named in the field" });
      const ctl = control(input, "dependency", "depends_on", "", {
        onChange: false, empty: "name a step", refused: (typed) => "dependency on " + short(typed) + " not added",
        check: () => (!input.value ? "" : input.value === s.id ? "a step cannot depend on itself"
          : !outline.steps.some((x) => x.id === input.value) ? "no step is called " + input.value
            : explicit.includes(input.value) ? "already a dependency" : ""),
        patch: () => ({ op: "edge.add", from: input.value, to: s.id }),
        after: () => { input.value = ""; ctl.sent = null; },
      });
      add.addEventListener("click", ctl.commit);
      box.append(el("div", { className: "inspector-field" }, el("label", { for: uid, textContent: "Add a dependency (step id)" }), input, ids, add, ctl.msg));
    }
    const implicit = (outline.edges || []).filter((e) => e.to === s.id && !e.explicit);
    if (implicit.length) {
      box.append(el("p", { className: "inspector-note", textContent: "Implicit (change the field they come from to remove them):" }),
        el("ul", { className: "inspector-list inspector-implicit" },
          ...implicit.map((e) => el("li", { textContent: e.from + " — via " + (e.via || []).join(", ") }))));
    }
    return box;
  }

  // ---- what is being typed, kept over a redraw ----
  // The fields typed in and not yet in the text (or refused), and the one the keyboard is in, with its caret.
  function typing() {
    const kept = new Map();
    controls.forEach((ctl, path) => {
      if (ctl.input.value !== ctl.drawn || ctl.refusal) {
        kept.set(path, { value: ctl.input.value, drawn: ctl.drawn, bad: ctl.bad, refusal: ctl.refusal, sent: ctl.sent, message: ctl.msg.textContent });
      }
    });
    const a = document.activeElement;
    const focus = a && container.contains(a) && a.dataset.path ? { path: a.dataset.path, at: caret(a) } : null;
    return { kept, focus };
  }
  const caret = (a) => { try { return [a.selectionStart, a.selectionEnd, a.selectionDirection, a.scrollTop]; } catch { return null; } };

  // Into the form just drawn: the typed values over the text's, each checked again (its verdict said only if it
  // changed); the refusals; the keyboard and its caret. Returns the typed values with no field to go to, and
  // whether any typed value differs from the new text's.
  function retype({ kept, focus }) {
    const lost = [];
    let differs = false;
    kept.forEach((k, path) => {
      const ctl = controls.get(path);
      if (!ctl) { if (k.value !== k.drawn && k.value !== "") lost.push([path, k.value]); return; }
      ctl.bad = k.bad;
      ctl.sent = k.sent;
      if (k.refusal && ctl.drawn !== k.refusal.typed) {
        ctl.refusal = k.refusal;
        if (k.value !== k.drawn) ctl.input.value = k.value;
        ctl.say(k.message, true);
      } else if (k.value !== k.drawn && !(k.sent === k.value && ctl.drawn !== k.drawn)) { // a sent value answered: the text's
        ctl.input.value = k.value;
        ctl.input.dispatchEvent(new Event("input")); // checked again as typed
        ctl.sent = k.sent;
      }
      differs = differs || ctl.input.value !== ctl.drawn;
    });
    const ctl = focus && controls.get(focus.path);
    if (ctl) {
      ctl.input.focus({ preventScroll: true });
      if (focus.at && focus.at[0] !== null) {
        try { ctl.input.setSelectionRange(focus.at[0], focus.at[1], focus.at[2]); ctl.input.scrollTop = focus.at[3]; } catch { /* a select */ }
      }
    }
    return { lost, differs };
  }

  function retire() {
    controls.forEach((ctl) => { ctl.retired = true; });
    controls = new Map();
  }

  function say(text, stepId) {
    notice = { text, for: stepId };
    announce(text);
  }
  const listOf = (lost) => lost.map(([path, v]) => words(path) + " " + short(v)).join(", ");

  let shown = null; // what the form was drawn from: the same again draws nothing
  function show(s, outline, problems) {
    const before = current;
    const ids = outline && outline.steps ? outline.steps.map((x) => x.id) : null;
    const typed = typing();
    // The step shown went from the text (not another one chosen): the typed values are said, not dropped.
    const went = before && (!s || s.id !== before.id) && ids && !ids.includes(before.id);
    const renamed = went && s && !outlineIds.includes(s.id);
    if (!went && (!s || !before || s.id !== before.id)) typed.kept.clear(); // another step chosen
    if (notice && notice.for !== (s ? s.id : null)) notice = null;
    current = s;
    if (ids) outlineIds = ids;
    if (!s) {
      retire();
      const lost = [...typed.kept].filter(([, k]) => k.value !== k.drawn && k.value !== "").map(([p, k]) => [p, k.value]);
      if (went && lost.length) say("Step " + before.id + " is no longer in the text (removed or renamed there): what you typed was not applied: " + listOf(lost) + ".", null);
      if (shown === "" && !went) return; // the hint is shown already
      shown = "";
      body.replaceChildren(...(notice ? [el("p", { className: "inspector-notice", textContent: notice.text })] : []),
        el("p", { className: "muted", textContent: "Select a step on the graph to see its fields here." }));
      return;
    }
    outline = outline || { steps: [s], edges: [] };
    const key = JSON.stringify([s.id, s.kind, s.agent, s.fields, (outline.edges || []).filter((e) => e.to === s.id),
                                (outline.steps || []).map((x) => x.id), problems || []]);
    if (key === shown) return;
    shown = key;
    retire();
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
    const noticeAt = el("p", { className: "inspector-notice" });
    body.replaceChildren(noticeAt, head, form);
    const { lost, differs } = retype(typed);
    if (renamed && differs) say("Step " + before.id + " is now called " + s.id + " in the text: what you typed is kept.", s.id);
    if (lost.length) say("No field of step " + s.id + " is left for what you typed: " + listOf(lost) + ".", s.id);
    if (notice) noticeAt.textContent = notice.text; else noticeAt.remove();
  }

  // Enter on a graph's step: the inspector takes the keyboard.
  document.addEventListener("forge:inspect", (e) => {
    if (current && e.detail && e.detail.id === current.id) container.querySelector("input, select, textarea, button")?.focus();
  });
  show(null);
  return { show, focus: () => container.querySelector("input, select, textarea, button")?.focus() };
}
