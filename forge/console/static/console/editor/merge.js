// Diffs and merges of workflow texts in the editor page: the Save dialog's diff to the base version (the
// server's), and the three-way merge view a stale save opens (base, theirs, mine side by side; each conflict
// resolved by taking a side or editing it). Texts are only ever put in the page as text (textContent), never as markup.

// `pre` filled with a unified diff the server made (POST <draft>/diff, the engine's anchored diff, as the
// versions page shows); the count of changed lines.
export function showUnified(pre, diff) {
  pre.replaceChildren();
  let changed = 0;
  for (const line of diff.split(/(?<=\n)/).slice(2)) { // after the --- and +++ headers
    if (!line) continue;
    const kind = line.startsWith("@@") ? "hunk" : line[0] === "+" ? "add" : line[0] === "-" ? "del" : "same";
    if (kind === "add" || kind === "del") changed++;
    pre.append(span(kind, line));
  }
  if (!changed) pre.append(span("same", "(no change)\n"));
  return changed;
}

function span(kind, text) {
  const el = document.createElement("span");
  el.className = "diff-" + kind;
  el.textContent = text;
  return el;
}

function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs)) {
    if (key === "text") node.textContent = value;
    else node.setAttribute(key, value);
  }
  node.append(...children);
  return node;
}

// The merged text cut into its clean runs and its conflicts, by the conflict markers merge3 writes
// (<<<<<<< mine|theirs, optionally ||||||| base, =======, >>>>>>>). Null when the markers do not match the
// server's count of conflicts (a text that holds marker-like lines of its own): the view then edits it whole.
export function splitMerged(merged, count) {
  const parts = [];
  let clean = [], conflict = null, side = null;
  for (const line of merged.split(/(?<=\n)/)) {
    const bare = line.replace(/\r?\n$/, "");
    if (conflict === null && bare.startsWith("<<<<<<<")) {
      parts.push(clean.join("")); clean = [];
      conflict = { first: bare.slice(8).trim(), a: [], base: [], b: [] }; side = "a";
    } else if (conflict && bare.startsWith("|||||||") && side === "a") side = "base";
    else if (conflict && bare === "=======" && side !== "b") side = "b";
    else if (conflict && bare.startsWith(">>>>>>>") && side === "b") {
      parts.push({ ...conflict, a: conflict.a.join(""), base: conflict.base.join(""), b: conflict.b.join("") });
      conflict = null; side = null;
    } else if (conflict) conflict[side].push(line);
    else clean.push(line);
  }
  if (conflict !== null) return null;
  parts.push(clean.join(""));
  return parts.filter((p) => typeof p !== "string").length === count ? parts : null;
}

// The merge view in `section`: the server's 409 merge {base, theirs, mine, merged, clean, conflicts,
// theirs_version}. `onSave(text)` saves the resolved text on theirs; `onCancel()` closes the view.
export function openMerge(section, merge, { onSave, onCancel }) {
  const count = (merge.conflicts || []).length;
  const parts = merge.clean ? [merge.merged] : splitMerged(merge.merged, count);
  section.replaceChildren();
  section.append(el("h2", { id: "merge-h", text: `v${merge.theirs_version} was saved since your draft began` }),
    el("p", { text: merge.clean
      ? "Your changes and theirs touch different lines: they merged by themselves. Check the result and save it."
      : `${count} place${count === 1 ? "" : "s"} changed on both sides. Resolve each one: take their lines, ` +
        "yours, or edit them, then save the result." }));
  const sides = el("div", { class: "merge-sides" });
  for (const [name, title] of [["base", "Base (where your draft began)"], ["theirs", `Theirs (v${merge.theirs_version})`],
                               ["mine", "Mine (your draft)"]]) {
    const pre = el("pre", { class: "merge-text", tabindex: "0", "aria-label": title });
    fillHighlighted(pre, merge[name], (merge.conflicts || []).map((c) => c[name]));
    sides.append(el("section", { class: "merge-side", "data-side": name }, el("h3", { text: title }), pre));
  }
  section.append(sides);
  const result = el("div", { class: "merge-result" });
  const resolvers = [];
  if (parts === null) {
    const area = el("textarea", { class: "code", rows: "20", spellcheck: "false", "aria-label": "The merged text" });
    area.value = merge.merged;
    result.append(el("p", { class: "muted", text: "Edit the merged text: remove the conflict markers and keep what should stay." }), area);
    resolvers.push(() => area.value);
  } else {
    let n = 0;
    for (const part of parts) {
      if (typeof part === "string") {
        if (part) result.append(el("pre", { class: "merge-clean", text: part }));
        resolvers.push(() => part);
        continue;
      }
      n++;
      const conflict = (merge.conflicts || [])[n - 1] || {};
      const theirs = part.first === "mine" ? part.b : part.a;
      const mine = part.first === "mine" ? part.a : part.b;
      const area = el("textarea", { class: "code", spellcheck: "false", rows: String(Math.max(3, (mine + theirs).split("\n").length)),
                                    "aria-label": `Conflict ${n}: the text to keep` });
      area.value = mine;
      const pick = (label, text) => {
        const button = el("button", { type: "button", text: label });
        button.addEventListener("click", () => { area.value = text; area.focus(); });
        return button;
      };
      result.append(el("fieldset", { class: "merge-conflict", "data-conflict": String(n) },
        el("legend", { text: `Conflict ${n}${conflict.start_line ? ` (line ${conflict.start_line})` : ""}` }),
        el("div", { class: "merge-picks" }, pick("Take theirs", theirs), pick("Take mine", mine),
           pick("Take both", theirs + mine)), area));
      resolvers.push(() => area.value);
    }
  }
  section.append(el("h3", { text: "Result" }), result);
  const error = el("p", { class: "error", role: "alert" });
  const save = el("button", { type: "button", class: "primary", id: "merge-save", text: `Save on v${merge.theirs_version}` });
  const cancel = el("button", { type: "button", class: "quiet", text: "Back to my draft" });
  save.addEventListener("click", async () => {
    const text = resolvers.map((r) => r()).join("");
    if (/^(<<<<<<<|=======|>>>>>>>)/m.test(text) && !window.confirm("The result still holds conflict markers. Save it anyway?")) return;
    save.disabled = true;
    error.textContent = "";
    try { error.textContent = (await onSave(text)) || ""; } finally { save.disabled = false; }
  });
  cancel.addEventListener("click", () => { section.hidden = true; onCancel(); });
  section.append(error, el("div", { class: "dialog-actions" }, save, cancel));
  section.hidden = false;
  section.scrollIntoView({ block: "start" });
  save.focus();
}

// `pre` holds `text` with each of `chunks` (a conflict's lines on this side) marked.
function fillHighlighted(pre, text, chunks) {
  let at = 0;
  for (const chunk of chunks) {
    const found = chunk ? text.indexOf(chunk, at) : -1;
    if (found < 0) continue;
    pre.append(document.createTextNode(text.slice(at, found)), el("mark", { class: "merge-mark", text: chunk }));
    at = found + chunk.length;
  }
  pre.append(document.createTextNode(text.slice(at)));
}
