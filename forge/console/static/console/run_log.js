// The run log under the graph: every step's events and output in one stream (forge/runs/reads/run_log.py), with a
// level filter, text search and a step column, narrowed to the selected step; long output folded behind "show all".
// New entries are read after the last one shown when events arrive (never the whole log again).
(function () {
  "use strict";
  const root = document.getElementById("run-log");
  if (!root) return;
  const url = root.dataset.url;
  const KEEP = 20000; // entries kept in the page; the download has every one
  const DRAWN = 500;  // rows drawn: the newest that match
  const FOLD = 8;     // lines shown of a long text until "show all"
  const LEVELS = ["info", "warning", "error"];
  const body = root.querySelector("tbody");
  const level = root.querySelector("#log-level");
  const search = root.querySelector("#log-search");
  const scope = root.querySelector("#log-scope");
  const all = root.querySelector("#log-all-steps");
  const downloads = root.querySelectorAll("[data-download]");
  const note = root.querySelector("#log-note");
  const scroller = root.querySelector(".log-scroll");
  let entries = [];
  let after = 0;
  let loading = false;
  let again = false;
  let step = null;
  const unfolded = new Set();

  function load() {
    if (loading) { again = true; return; }
    loading = true;
    fetch(url + "?limit=2000" + (after ? "&after=" + after : ""), { credentials: "same-origin" })
      .then((r) => (r.ok ? r.json() : Promise.reject(r.status)))
      .then((page) => {
        entries.push(...page.entries);
        if (entries.length > KEEP) entries = entries.slice(entries.length - KEEP);
        after = page.next_after || Math.max(after, page.last_event_id);
        loading = false;
        draw();
        if (page.next_after || again) { again = false; load(); }
      })
      .catch(() => { loading = false; note.textContent = "Could not read the log."; });
  }

  function matches(e, least, needle) {
    return LEVELS.indexOf(e.level) >= least && (!step || e.step === step)
      && (!needle || e.text.toLowerCase().includes(needle) || e.step.toLowerCase().includes(needle));
  }

  function cell(text, className) {
    const td = document.createElement("td");
    td.textContent = text;
    if (className) td.className = className;
    return td;
  }

  function row(e, key) {
    const tr = document.createElement("tr");
    tr.className = "log-" + e.level;
    tr.dataset.level = e.level;
    tr.dataset.step = e.step;
    const time = e.at.slice(11, 23);
    const stepCell = document.createElement("td");
    if (e.step) {
      const link = document.createElement("button");
      link.type = "button"; link.className = "link"; link.dataset.logStep = e.step; link.textContent = e.step;
      stepCell.append(link);
    }
    const text = document.createElement("td");
    text.className = "log-text";
    const lines = e.text.split("\n");
    const pre = document.createElement("pre");
    if (lines.length > FOLD && !unfolded.has(key)) {
      pre.textContent = lines.slice(0, FOLD).join("\n");
      const more = document.createElement("button");
      more.type = "button"; more.className = "link show-all"; more.dataset.unfold = key;
      more.textContent = "show all " + lines.length + " lines";
      text.append(pre, more);
    } else {
      pre.textContent = e.text;
      text.append(pre);
    }
    tr.append(cell(time, "muted"), cell(e.level, "log-level"), stepCell, cell(e.kind, "muted"), text);
    return tr;
  }

  function draw() {
    const least = LEVELS.indexOf(level.value);
    const needle = search.value.trim().toLowerCase();
    const shown = [];
    for (let i = entries.length - 1; i >= 0 && shown.length < DRAWN; i--) {
      if (matches(entries[i], least, needle)) shown.push(i);
    }
    shown.reverse();
    const stick = scroller.scrollHeight - scroller.scrollTop - scroller.clientHeight < 40;
    body.replaceChildren(...shown.map((i) => row(entries[i], entries[i].id + ":" + i)));
    const total = entries.filter((e) => matches(e, least, needle)).length;
    note.textContent = total > shown.length ? "Showing the newest " + shown.length + " of " + total + " entries: download the log for all of them." : total ? "" : "No entry matches.";
    root.dataset.count = String(shown.length);
    scope.textContent = step ? "Step " + step + " only" : "All steps";
    all.hidden = !step;
    downloads.forEach((a) => {
      const q = new URLSearchParams({ format: a.dataset.download });
      if (level.value !== "info") q.set("level", level.value);
      if (step) q.set("step", step);
      if (needle) q.set("q", search.value.trim());
      a.href = url + "?" + q.toString();
    });
    if (stick) scroller.scrollTop = scroller.scrollHeight;
  }

  let timer = 0;
  level.addEventListener("change", draw);
  search.addEventListener("input", () => { clearTimeout(timer); timer = setTimeout(draw, 150); });
  all.addEventListener("click", () => { step = null; draw(); });
  body.addEventListener("click", (e) => {
    const unfold = e.target.closest("[data-unfold]");
    if (unfold) { unfolded.add(unfold.dataset.unfold); draw(); return; }
    const link = e.target.closest("[data-log-step]");
    if (link && window.forgeRun && window.forgeRun.select) window.forgeRun.select(link.dataset.logStep);
  });
  document.addEventListener("forge:select", (e) => { step = e.detail.step || null; draw(); });
  let pending = 0;
  document.addEventListener("forge:events", () => { clearTimeout(pending); pending = setTimeout(load, 300); });
  document.addEventListener("forge:snapshot", load); // the events it replaced are read from the server too
  load();
})();
