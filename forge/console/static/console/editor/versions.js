// The versions page: the diff of the two chosen versions, as text and step by step, read from /editor/diff.
const holder = document.getElementById("version-diff");

function el(tag, text, className) {
  const node = document.createElement(tag);
  if (text !== undefined) node.textContent = text;
  if (className) node.className = className;
  return node;
}

const shown = (value) => (value === null || value === undefined ? "—" : JSON.stringify(value));

function fieldList(changes) {
  const list = el("ul", undefined, "field-changes");
  for (const c of changes) {
    const item = el("li");
    item.append(el("code", c.field), c.change === "added" ? ` added: ${shown(c.new)}`
      : c.change === "removed" ? ` removed (was ${shown(c.old)})` : ` ${shown(c.old)} → ${shown(c.new)}`);
    list.append(item);
  }
  return list;
}

function showSummary(box, s) {
  box.replaceChildren();
  if (!s.parsed) {
    box.append(el("p", `v${s.error.which === "old" ? "from" : "to"} does not parse (${s.error.code}): ${s.error.message}`, "error"));
    return;
  }
  const line = (label, ids, className) => {
    if (!ids.length) return;
    const p = el("p", undefined, className);
    p.append(el("strong", label + ": "), ids.join(", "));
    box.append(p);
  };
  line("Added", s.added, "summary-added");
  line("Removed", s.removed, "summary-removed");
  line("Renamed", s.renamed.map((r) => `${r.from} → ${r.to}`), "summary-renamed");
  line("Moved", s.moved, "summary-moved");
  for (const [id, changes] of Object.entries(s.changed)) {
    const section = el("div", undefined, "summary-changed");
    section.dataset.step = id;
    const title = el("p");
    title.append(el("strong", "Changed: "), el("code", id));
    section.append(title, fieldList(changes));
    box.append(section);
  }
  if (s.document.length) {
    const section = el("div", undefined, "summary-document");
    section.append(el("p", "The document's own fields:"), fieldList(s.document));
    box.append(section);
  }
  if (!box.children.length) box.append(el("p", "No step or field changed.", "muted"));
}

function showText(pre, diff) {
  pre.replaceChildren();
  for (const line of diff.split(/(?<=\n)/)) {
    const kind = line.startsWith("@@") ? "hunk" : line.startsWith("+") ? "add" : line.startsWith("-") ? "del" : "same";
    pre.append(el("span", line, "diff-" + kind));
  }
  if (!diff) pre.append(el("span", "(the two texts are the same)", "diff-same"));
}

async function load() {
  const box = document.getElementById("summary");
  try {
    const response = await fetch(holder.dataset.url, { credentials: "same-origin", headers: { Accept: "application/json" } });
    const data = await response.json();
    if (!response.ok) throw new Error(data.error?.message || `the server answered ${response.status}`);
    showSummary(box, data.summary);
    showText(document.getElementById("diff-text"), data.diff);
    holder.dataset.ready = "true";
  } catch (error) {
    box.replaceChildren(el("p", `The diff could not be read: ${error.message}.`, "error"));
  }
}

if (holder) load();
