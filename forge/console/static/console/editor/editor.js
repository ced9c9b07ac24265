// The editor page's controller (docs/editor.md). The text in the YAML pane is the only truth: typing is sent to
// the server to be kept in the draft and validated (at most twice a second, a newer request aborting an older
// one, late answers dropped by revision); a gesture on the graph, the inspector or the palette is a typed patch
// the server applies to the current text, whose changes enter the pane as one transaction, so the pane's history
// is the page's one undo history. The graph and the inspector are redrawn from the server's outline of the text.
import { openMerge, showUnified } from "./merge.js";

const INTERVAL = 500; // ms between two validation requests: at most 2 a second
const KEEPALIVE_BYTES = 60_000; // a keepalive fetch's body past 64 KiB is dropped by browsers (with headroom)
const LOCKED = "Finish or close the merge first (Save on the merged version, or Back to my draft).";

const root = document.getElementById("editor");
const api = root.dataset.api; // the draft's JSON API: GET it; POST text, patch, placements, save, discard
const $ = (id) => document.getElementById(id);
const csrf = $("editor-csrf").querySelector("input[name=csrfmiddlewaretoken]").value;
const workflowsUrl = root.dataset.workflowsUrl;

const state = {
  workflow: root.dataset.workflow || null, baseVersion: Number(root.dataset.baseVersion) || null,
  latestVersion: null,
  merging: false, // the merge view is open: the draft under it stays as it was merged from
  revision: 0, // of the last request that sent text (typing, patch, save); answers to older ones are dropped
  checkedText: null, // the text the shown problems and outline are of
  drawn: null, // the outline of that text, for the graph, which says when it does not parse
  outline: { parsed: false, steps: [], edges: [] }, // the last outline that parsed: steps, selection, inspector
  problems: [], valid: false, dirty: false,
  placements: {}, selected: null, clipboard: "",
};

let pane = null, graph = null, inspector = null, palette = null;
let applying = false; // a patch's changes are entering the pane: they are checked text, not typing
let known = new Set(); // the step ids of the last outline: a duplicate's new id is the one not among them

// -- talking to the server ------------------------------------------------------------------------------------
async function call(method, url, body, options = {}) {
  const response = await fetch(url, {
    method, credentials: "same-origin", signal: options.signal, keepalive: options.keepalive,
    headers: { "Content-Type": "application/json", Accept: "application/json", "X-CSRFToken": csrf },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  let data = {};
  try { data = (await response.json()) || {}; } catch { /* not JSON: said by the status */ }
  return { status: response.status, ok: response.ok, data };
}

// Why a request did not do its work: the server's word, or that it could not be reached (no answer).
const refusal = (answer) => (!answer ? "the server could not be reached"
  : answer.data.error?.message || `the server answered ${answer.status}`);

function say(text, link) {
  const said = $("editor-said");
  said.replaceChildren(text);
  if (link) {
    const a = document.createElement("a");
    a.href = link.href;
    a.textContent = link.text;
    said.append(" ", a);
  }
}

// -- validation while typing ----------------------------------------------------------------------------------
let timer = null, lastSent = -Infinity, inflight = null;

function textChanged() {
  showValidity("checking");
  if (timer === null) timer = setTimeout(sendText, Math.max(0, lastSent + INTERVAL - performance.now()));
}

async function sendText() {
  timer = null;
  const text = pane.getText();
  if (text === state.checkedText) return showValidity();
  lastSent = performance.now();
  inflight?.abort();
  const controller = (inflight = new AbortController());
  const revision = ++state.revision;
  let answer;
  try {
    answer = await call("POST", api + "text", { text, revision }, { signal: controller.signal });
  } catch (error) {
    if (error.name !== "AbortError" && revision === state.revision) showValidity("failed", "the server could not be reached");
    return;
  } finally {
    if (inflight === controller) inflight = null;
  }
  if (revision !== state.revision) return; // a newer request went out: its answer speaks for the text
  if (overtaken(answer)) return textChanged();
  if (!answer.ok) return showValidity("failed", refusal(answer));
  state.checkedText = text;
  take(answer.data);
  if (pane.getText() !== text) textChanged();
}

// Another page of this person's (a second tab) wrote the draft at a later revision: this page's next request
// goes after it. True when that is the answer.
function overtaken(answer) {
  if (answer.status !== 409 || answer.data.error?.code !== "stale_revision") return false;
  state.revision = Math.max(state.revision, Number(answer.data.revision) || 0);
  return true;
}

// An answer's view of the text: problems, validity, outline.
function take(data) {
  if (data.outline) {
    state.drawn = data.outline;
    if (data.outline.parsed) state.outline = data.outline; // a half-typed line keeps the step chosen
  }
  if (Array.isArray(data.problems)) state.problems = data.problems;
  state.valid = Boolean(data.valid);
  state.dirty = Boolean(data.dirty);
  if (data.revision > state.revision) state.revision = data.revision;
  if (state.selected && !stepOf(state.selected)) state.selected = null;
  return draw();
}

const stepOf = (id) => (id && state.outline.steps ? state.outline.steps.find((s) => s.id === id) || null : null);
const problemsOf = (id) => state.problems.filter((p) => p.step === id);

function problemsByStep() {
  const by = {};
  for (const p of state.problems) if (p.step) (by[p.step] = by[p.step] || []).push(p);
  return by;
}

// Drawing an answer (one every half second while typing; the answer of a 1,000-step workflow carries its whole
// outline). What did not change is not drawn again: the pane, the graph, the inspector and the problems list each
// skip an answer that changes nothing of theirs. What did change is drawn in tasks of its own (the pane, the
// problems list and the validity at once; the graph; then the inspector), so that no task keeps the page from
// the next key for long. Each task draws the newest answer: one taken meanwhile takes over the drawing.
let drawing = 0;
const nextTask = () => new Promise((resume) => setTimeout(resume, 0));

async function draw() {
  const run = ++drawing;
  if (state.drawn?.parsed) pane.setSteps?.(state.outline.steps); // an unparsed text keeps the last steps' spans
  pane.setProblems(state.problems);
  palette?.update(state.outline, state.selected);
  drawProblems();
  showValidity();
  if (graph) {
    await nextTask();
    if (run !== drawing) return;
    graph.update(state.drawn || state.outline, state.placements, problemsByStep());
    // A step chosen before the graph had it (an undo brings it back with the cursor in it, a patch adds it) is
    // chosen there now.
    if (state.selected && !graph.selected().includes(state.selected)) graph.select(state.selected);
  }
  if (inspector) {
    await nextTask();
    if (run !== drawing) return;
    inspector.show(stepOf(state.selected), state.outline, problemsOf(state.selected));
  }
}

let listed = null; // the problems the list shows, as JSON: the same again is not drawn again
function drawProblems() {
  const key = JSON.stringify(state.problems);
  if (key === listed) return;
  listed = key;
  const list = $("problems");
  list.replaceChildren(...state.problems.map((p) => problemItem(p, () => goTo(p))));
  if (!state.problems.length) {
    const item = document.createElement("li");
    item.className = "muted";
    item.textContent = "No problem.";
    list.append(item);
  }
  $("problem-count").textContent = state.problems.length || "";
}

// One problem as the list shows it: a button that takes the person to where it is.
function problemItem(p, onClick) {
  const button = document.createElement("button");
  button.type = "button";
  button.className = "problem";
  button.dataset.code = p.code;
  button.dataset.severity = p.severity || "error";
  const where = p.line ? `line ${p.line}${p.column ? `, column ${p.column}` : ""}` : p.step ? `step ${p.step}` : "document";
  const code = document.createElement("code");
  code.textContent = p.code;
  button.append(`${p.severity === "warning" ? "warning" : "error"} · ${where}: `, code, ` ${p.message}`);
  button.addEventListener("click", onClick);
  const item = document.createElement("li");
  item.append(button);
  return item;
}

function goTo(problem) {
  const step = stepOf(problem.step);
  if (problem.line) pane.selectLines(problem.line, problem.line);
  else if (step) pane.selectLines(step.lines[0], step.lines[1]);
  pane.focus();
}

function showValidity(kind, why) {
  const el = $("validity");
  const pending = timer !== null || inflight !== null || (pane && pane.getText() !== state.checkedText);
  kind = kind || (pending ? "checking" : state.valid ? "valid" : "invalid");
  const errors = state.problems.filter((p) => p.severity !== "warning").length;
  const warnings = state.problems.length - errors;
  el.dataset.state = kind;
  el.textContent = {
    checking: "Checking…", failed: `Not checked: ${why}`,
    valid: `Valid${warnings ? `, ${warnings} warning${warnings === 1 ? "" : "s"}` : ""}`,
    invalid: `${errors || "Some"} problem${errors === 1 ? "" : "s"}: not valid`,
  }[kind];
  const save = $("save");
  save.disabled = kind !== "valid" || !state.dirty;
  save.title = kind !== "valid" ? "Only a valid workflow can be saved"
    : state.dirty ? "Save the draft as a new version" : `No change since v${state.baseVersion}`;
}

// -- patches: every gesture of the graph, the inspector and the palette ---------------------------------------
let patches = Promise.resolve();
// One failed gesture never stops the next: a rejected chain would drop every later patch without a word.
// Each answers what the inspector shows beside its field: nothing, or { refused: why }.
const patch = (op) => (refuseWhileMerging() ? Promise.resolve({ refused: LOCKED })
  : patches = patches.then(() => applyPatch(op)).catch((error) => {
    console.error(error);
    say("The change was not made: the page could not apply the server's answer.");
    textChanged();
    return { refused: "the page could not apply the server's answer" };
  }));

// True (and said) while the merge view is open: a change to the draft then would be lost from the merge.
function refuseWhileMerging() {
  if (!state.merging) return false;
  say(LOCKED);
  inspector?.show(null); // drawn again from the text: a field typed in shows the text's value again
  inspector?.show(stepOf(state.selected), state.outline, problemsOf(state.selected));
  return true;
}

// The merge view opened or closed: the YAML pane follows (gestures, undo and Save ask refuseWhileMerging).
function lockForMerge(merging) {
  state.merging = merging;
  pane.setReadOnly(merging);
  $("yaml-locked").textContent = merging ? "read-only while the merge is open" : ""; // an empty badge is not shown
  say(merging ? `The draft is read-only while the merge is open. ${LOCKED}` : "");
}

async function applyPatch(op, again = true) {
  clearTimeout(timer);
  timer = null;
  inflight?.abort(); // the patch's answer validates the newer text
  const text = pane.getText();
  const revision = ++state.revision;
  showValidity("checking");
  let answer;
  try {
    answer = await call("POST", api + "patch", { text, revision, op });
  } catch {
    return refused("The change was not made: the server could not be reached.", "the server could not be reached");
  }
  if (again && overtaken(answer)) return applyPatch(op, false);
  if (!answer.ok) return refused(`Not changed: ${refusal(answer)}.`, refusal(answer));
  if (pane.getText() !== text) { // typed while the patch was on its way: its ranges are of an older text
    return refused("Not changed: the text changed while the change was being made. Do it again.",
                   "the text changed while the change was being made: do it again");
  }
  applying = true;
  try {
    // Ranges outside the text throw before anything changes: the whole-text fallback below then takes over.
    try { pane.applyChanges(answer.data.changes, { userEvent: "patch" }); } catch (error) { console.error(error); }
    if (pane.getText() !== answer.data.text) { // never expected: the server's ranges missed; its text is the truth
      console.error("the patch's changes do not give the server's text; the pane takes the whole text");
      pane.applyChanges([{ from: 0, to: pane.getText().length, insert: answer.data.text }], { userEvent: "patch" });
    }
  } finally {
    applying = false;
  }
  state.checkedText = answer.data.text;
  // A rename carries the step's place and selection; a paste's `renamed` names the copies, the originals stay.
  if (op.op === "step.rename") {
    for (const [old, now] of Object.entries(answer.data.renamed || { [op.id]: op.to })) {
      if (state.placements[old]) { state.placements[now] = state.placements[old]; delete state.placements[old]; }
      if (state.selected === old) state.selected = now;
    }
  }
  say("");
  take(answer.data);
  // A step added, duplicated or pasted is chosen, a renamed one chosen again: its node, and its block as the
  // answer's outline places it (the block chosen before may have moved or be another step's).
  const now = (state.outline.steps || []).map((s) => s.id);
  const chosen = op.op === "step.add" ? op.step.id : op.op === "step.rename" ? state.selected
    : op.op === "step.duplicate" || op.op === "selection.paste" ? now.find((id) => !known.has(id)) : null;
  if (chosen && stepOf(chosen)) select(chosen);
  known = new Set(now);
}

// A patch not made: said on the page, the text checked again, and why for the field that asked.
function refused(said, why) {
  say(said);
  textChanged();
  return { refused: why };
}

// -- selection: a node, its YAML block and the inspector are one -----------------------------------------------
function select(id, from) {
  if (id === state.selected && from) return;
  state.selected = id || null;
  const step = stepOf(state.selected);
  if (from !== "graph") graph?.select(state.selected);
  if (from !== "yaml" && step) pane.selectLines(step.lines[0], step.lines[1]);
  inspector?.show(step, state.outline, problemsOf(state.selected));
  palette?.update(state.outline, state.selected); // a new step goes after the selected one
}

// -- copy and paste of steps, as YAML text --------------------------------------------------------------------
async function copy(ids) {
  if (!ids || !ids.length) return;
  const answer = await call("POST", root.dataset.copyUrl, { text: pane.getText(), ids }).catch(() => null);
  if (!answer || !answer.ok) return say(`Not copied: ${refusal(answer)}.`);
  state.clipboard = answer.data.yaml;
  const what = `${ids.length} step${ids.length === 1 ? "" : "s"}`;
  try {
    await navigator.clipboard.writeText(state.clipboard);
    say(`Copied ${what} as YAML: paste them on the graph, in the YAML, or in another workflow.`);
  } catch {
    say(`Copied ${what} for this page (the browser kept its clipboard closed).`);
  }
}

async function pasteAsk() { // the graph's Ctrl-V or Paste button: the system clipboard if the browser opens it
  let text = "";
  try { text = await navigator.clipboard.readText(); } catch { /* closed: this page's own copy */ }
  paste(text || state.clipboard);
}

function paste(yaml) {
  if (!yaml || !yaml.trim()) return say("Nothing to paste: copy steps first.");
  patch({ op: "selection.paste", yaml, after: state.selected });
}

// -- placements -----------------------------------------------------------------------------------------------
async function place(positions) {
  Object.assign(state.placements, positions);
  const answer = await call("POST", api + "placements", { positions }).catch(() => null);
  if (!answer || !answer.ok) say(`The positions were not kept: ${refusal(answer)}.`);
}

// -- save, merge, discard -------------------------------------------------------------------------------------
let diffing = 0; // the Save dialog's diff request: an older one's answer is dropped
async function openSave() {
  if (refuseWhileMerging()) return;
  const text = pane.getText();
  const base = state.baseVersion;
  $("save-h").textContent = state.workflow ? `Save ${state.workflow}` : "Save the new workflow";
  $("save-diff").replaceChildren("Reading the changes…");
  $("save-what").textContent = base ? "" : "A new workflow: every line is new.";
  $("save-error").textContent = "";
  showSaveProblems([]);
  $("save-confirm").disabled = false;
  $("save-dialog").showModal();
  $("save-message").focus();
  const asked = ++diffing;
  const answer = await call("POST", api + "diff", { text }).catch(() => null);
  if (asked !== diffing) return;
  if (!answer || !answer.ok) {
    $("save-diff").replaceChildren(`The changes could not be shown: ${refusal(answer)}.`);
    return;
  }
  const changed = showUnified($("save-diff"), answer.data.diff);
  if (base) $("save-what").textContent = `${changed} line${changed === 1 ? "" : "s"} changed since v${base}, the version your draft began on.`;
}

async function save(text, message, baseVersion) {
  const revision = ++state.revision;
  const answer = await call("POST", api + "save", { text, revision, message, base_version: baseVersion }).catch(() => null);
  if (!answer) return "Not saved: the server could not be reached.";
  if (answer.status === 201 || answer.status === 200) { // 200: the latest version holds this text already
    saved(answer.data, text);
    return "";
  }
  if (answer.status === 409 && answer.data.error?.code === "stale_base" && answer.data.merge) {
    $("save-dialog").close();
    openMerge($("merge"), answer.data.merge, {
      onSave: (resolved) => saveMerged(resolved, message, answer.data.merge.theirs_version),
      onCancel: () => { lockForMerge(false); pane.focus(); },
    });
    lockForMerge(true);
    return "";
  }
  if (Array.isArray(answer.data.problems)) { // an invalid text (422): its problems are shown where they are
    take({ ...answer.data, valid: false, dirty: state.dirty });
    showSaveProblems(answer.data.problems);
    return `Not saved: ${refusal(answer)}.`;
  }
  return `Not saved: ${refusal(answer)}.`;
}

const SAVE_PROBLEMS_SHOWN = 5; // the rest are in the problems list, a click away
function showSaveProblems(problems) {
  const items = problems.slice(0, SAVE_PROBLEMS_SHOWN).map((p) => problemItem(p, () => {
    $("save-dialog").close();
    goTo(p);
  }));
  if (problems.length > SAVE_PROBLEMS_SHOWN) {
    const more = document.createElement("li");
    more.className = "muted";
    more.textContent = `and ${problems.length - SAVE_PROBLEMS_SHOWN} more in the problems list`;
    items.push(more);
  }
  $("save-problems").replaceChildren(...items);
  $("save-problems").hidden = !items.length;
}

async function saveMerged(text, message, theirs) {
  replaceText(text);
  state.baseVersion = theirs;
  return save(text, message, theirs); // saved: the view closes (saved); stale again: the newer merge opens
}

function replaceText(text) {
  const old = pane.getText();
  let head = 0;
  while (head < old.length && head < text.length && old[head] === text[head]) head++;
  let tail = 0;
  while (tail < old.length - head && tail < text.length - head && old[old.length - 1 - tail] === text[text.length - 1 - tail]) tail++;
  if (old !== text) pane.applyChanges([{ from: head, to: old.length - tail, insert: text.slice(head, text.length - tail) }], { userEvent: "patch" });
}

function saved(data, text) {
  $("save-dialog").close();
  if (state.merging) { $("merge").hidden = true; lockForMerge(false); }
  state.workflow = data.workflow;
  state.baseVersion = state.latestVersion = data.version;
  state.dirty = false;
  const page = workflowsUrl + encodeURIComponent(data.workflow) + "/";
  for (const [id, href, label] of [["history", page + "versions/", "History"], ["run", page + "#run", `Run v${data.version}`]]) {
    $(id).href = href;
    $(id).textContent = label;
    $(id).hidden = false;
  }
  const title = document.createElement("a");
  title.href = page;
  title.textContent = data.workflow;
  $("editor-title").replaceChildren("Edit ", title, " ", $("draft-note"));
  $("draft-note").textContent = `draft on v${data.version}`;
  if (location.pathname !== page + "edit/") history.replaceState(null, "", page + "edit/"); // a reload opens its editor
  say(data.created === false ? `Nothing new to save: v${data.version} of ${data.workflow} holds this text.`
    : `Saved v${data.version} of ${data.workflow}.`, { href: page + "versions/", text: "See its history" });
  showValidity();
}

async function discard() {
  if (!window.confirm("Discard your draft? Its changes since the saved version are lost.")) return;
  const answer = await call("POST", api + "discard", {}).catch(() => null);
  if (!answer || !answer.ok) return say(`Not discarded: ${refusal(answer)}.`);
  location.assign(answer.data.url || workflowsUrl);
}

// -- the page -------------------------------------------------------------------------------------------------
async function optional(path) { // a pane whose module does not load leaves the others working
  try {
    return await import(path);
  } catch (error) {
    console.warn(`the editor goes on without ${path}: ${error}`);
    return null;
  }
}

function bindKeys() {
  $("undo").addEventListener("click", () => refuseWhileMerging() || pane.undo());
  $("redo").addEventListener("click", () => refuseWhileMerging() || pane.redo());
  $("save").addEventListener("click", openSave);
  $("discard").addEventListener("click", discard);
  $("save-cancel").addEventListener("click", () => $("save-dialog").close());
  $("save-form").addEventListener("submit", async (event) => {
    event.preventDefault();
    $("save-confirm").disabled = true;
    const said = await save(pane.getText(), $("save-message").value.trim(), state.baseVersion);
    $("save-confirm").disabled = false;
    $("save-error").textContent = said;
  });
  // Ctrl-Z / Ctrl-Shift-Z (Ctrl-Y) anywhere on the page undo and redo the text, where every gesture is a step;
  // the YAML pane has them itself, and a form field keeps its own while it is typed in.
  document.addEventListener("keydown", (event) => {
    if (!(event.ctrlKey || event.metaKey) || event.altKey) return;
    const key = event.key.toLowerCase();
    const redo = (key === "z" && event.shiftKey) || (key === "y" && !event.shiftKey);
    if (!redo && !(key === "z" && !event.shiftKey)) return;
    if (pane.view?.dom.contains(event.target) || event.target.closest?.("input, textarea, select, [contenteditable]")) return;
    event.preventDefault();
    if (!refuseWhileMerging()) redo ? pane.redo() : pane.undo();
  });
  // Text typed but not yet kept goes with the page as it closes, so a reload finds it in the draft: in a keepalive
  // request when it fits one; a larger text is sent at once and the page asks before it goes, as the request
  // may not outlive it.
  const unsent = () => {
    const text = pane.getText();
    if (text === state.checkedText) return null;
    const body = JSON.stringify({ text, revision: state.revision + 1 });
    return { text, big: new TextEncoder().encode(body).length > KEEPALIVE_BYTES };
  };
  window.addEventListener("beforeunload", (event) => {
    if (!unsent()?.big) return;
    clearTimeout(timer);
    sendText();
    event.preventDefault();
    event.returnValue = ""; // what older Chromium asks for
  });
  window.addEventListener("pagehide", () => {
    const pending = unsent();
    if (pending && !pending.big) call("POST", api + "text", { text: pending.text, revision: ++state.revision }, { keepalive: true }).catch(() => {});
  });
}

async function start() {
  const [draft, schema, yamlPane, editorGraph, inspectorModule, paletteModule] = await Promise.all([
    call("GET", api), call("GET", root.dataset.schemaUrl).catch(() => null),
    optional("./yaml_pane.js"), optional("./editor_graph.js"), optional("./inspector.js"), optional("./palette.js"),
  ]);
  if (!draft.ok) return showValidity("failed", refusal(draft));
  const d = draft.data;
  const completions = schema?.ok ? schema.data["x-forge"]?.completions || {} : {};
  const schemaDoc = schema?.ok ? schema.data : null;
  Object.assign(state, { revision: d.revision, checkedText: d.text, placements: d.placements || {},
                         latestVersion: d.latest_version, workflow: d.workflow || state.workflow });
  if (d.base_version) state.baseVersion = d.base_version;
  const onChange = () => { if (!applying) textChanged(); };
  const onCursorStep = (id) => select(id, "yaml");
  if (!yamlPane?.createYamlPane) { // the text is the editor: without its pane there is nothing to edit
    $("yaml").textContent = "The YAML pane could not load: reload the page.";
    return showValidity("failed", "the YAML pane could not load");
  }
  pane = yamlPane.createYamlPane($("yaml"), { text: d.text, schema: schemaDoc, readOnly: false, onChange, onCursorStep });
  pane.setCompletions?.(completions);
  if (editorGraph?.createEditorGraph) {
    graph = editorGraph.createEditorGraph($("graph"), {
      readOnly: false, onPatch: patch, onSelect: (id) => select(id, "graph"), onPlace: place, onCopy: copy, onPaste: pasteAsk,
    });
  } else {
    $("graph").textContent = "The graph could not load: edit the YAML.";
  }
  if (inspectorModule?.createInspector) {
    $("inspector").replaceChildren();
    inspector = inspectorModule.createInspector($("inspector"), { schema: schemaDoc, readOnly: false, onPatch: patch,
                                                                  onSelect: (id) => select(id, "inspector") });
  }
  if (paletteModule?.createPalette) {
    palette = paletteModule.createPalette($("palette"), { schema: schemaDoc, readOnly: false, onPatch: patch });
  }
  bindKeys();
  known = new Set((d.outline?.steps || []).map((s) => s.id));
  await take(d); // drawn whole (the graph, the inspector) before the page says it is ready
  if (d.latest_version && d.base_version && d.latest_version > d.base_version) {
    say(`v${d.latest_version} was saved since your draft began on v${d.base_version}: saving will show a merge.`);
  }
  const chosenText = () => { const r = pane.view.state.selection.main; return pane.getText().slice(r.from, r.to); };
  window.forgeEditor = { text: () => pane.getText(), selection: chosenText, state, graph }; // what a test (or a person's console) reads
  root.dataset.ready = "true"; // the page has loaded the draft
}

start();
