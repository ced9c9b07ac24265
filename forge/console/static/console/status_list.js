// The status list beside the graph: Failed / Not run / Running / Waiting / Done with their counts, every step a
// link that selects it; a waiting or running step shows for how long, ticking. A step that never ran because
// something upstream failed, or was cancelled, is "Not run", never "Done" (which holds completed and skipped
// steps). Drawn from forgeAttempts (run_attempts.js).
(function () {
  "use strict";
  const root = document.getElementById("status-list");
  if (!root) return;
  const SHOWN = 100; // links drawn per group: a thousand-step run's list stays quick (Find reaches the rest)
  const GROUPS = [["failed", "Failed"], ["not_run", "Not run"], ["running", "Running"], ["waiting", "Waiting"],
    ["done", "Done"]];
  const groupOf = (s) => {
    if (s.status === "running") return "running";
    if (s.neverRan || s.status === "cancelled") return "not_run"; // stopped before it ended: not done
    if (s.status === "failed" || s.status === "timed_out") return "failed";
    if (s.status === "pending" || s.status === "waiting") return "waiting";
    return "done";
  };
  const lists = new Map();
  for (const [key, title] of GROUPS) {
    const box = document.createElement("details");
    box.className = "status-group";
    box.dataset.group = key;
    box.open = key === "failed" || key === "running"; // the failed step is one click away
    const summary = document.createElement("summary");
    summary.innerHTML = '<span class="group-title"></span> <span class="count">0</span>';
    summary.querySelector(".group-title").textContent = title;
    const ul = document.createElement("ul");
    box.append(summary, ul);
    root.append(box);
    lists.set(key, { box, ul, count: summary.querySelector(".count") });
  }

  function since(s) {
    if (s.status === "running") {
      const a = s.attempts[s.attempts.length - 1];
      return a && a.end === null ? a.start : null;
    }
    const w = s.waits[s.waits.length - 1];
    return w && w.end === null ? w.start : null;
  }

  function elapsed(ms) {
    const t = Math.max(0, Math.round(ms / 1000));
    if (t < 60) return t + " s";
    if (t < 3600) return Math.floor(t / 60) + " min " + (t % 60) + " s";
    return Math.floor(t / 3600) + " h " + Math.floor((t % 3600) / 60) + " min";
  }

  function draw() {
    frame = 0;
    const model = window.forgeAttempts;
    const by = new Map(GROUPS.map(([k]) => [k, []]));
    model.order.forEach((id) => { const s = model.steps.get(id); by.get(groupOf(s)).push(s); });
    for (const [key, steps] of by) {
      const { box, ul, count } = lists.get(key);
      count.textContent = steps.length;
      box.dataset.count = steps.length;
      ul.replaceChildren(...steps.slice(0, SHOWN).map((s) => {
        const li = document.createElement("li");
        const link = document.createElement("button");
        link.type = "button";
        link.className = "link step-link";
        link.dataset.statusStep = s.id;
        link.textContent = s.id;
        li.append(link);
        if (key === "done" || key === "failed" || (key === "not_run" && !s.neverRan)) { // "cancelled" says itself
          const status = document.createElement("span");
          status.className = "muted";
          status.textContent = " " + s.word;
          li.append(status);
        }
        const from = since(s);
        if (from !== null) {
          const clock = document.createElement("span");
          clock.className = "elapsed muted";
          clock.dataset.since = from;
          clock.textContent = " " + elapsed(model.now() - from);
          li.append(clock);
        }
        if (window.forgeRun && window.forgeRun.selected === s.id) li.className = "selected";
        return li;
      }));
      if (steps.length > SHOWN) {
        const li = document.createElement("li");
        li.className = "muted";
        li.textContent = "and " + (steps.length - SHOWN) + " more";
        ul.append(li);
      }
    }
    root.dataset.ready = "true";
  }
  let frame = 0;
  document.addEventListener("forge:attempts", () => { if (!frame && window.forgeAttempts.ready) frame = requestAnimationFrame(draw); });
  document.addEventListener("forge:select", (e) => {
    root.querySelectorAll("li.selected").forEach((li) => li.classList.remove("selected"));
    const link = e.detail.step && root.querySelector('[data-status-step="' + CSS.escape(e.detail.step) + '"]');
    if (link) link.parentElement.classList.add("selected");
  });
  root.addEventListener("click", (e) => {
    const link = e.target.closest("[data-status-step]");
    if (link && window.forgeRun && window.forgeRun.select) window.forgeRun.select(link.dataset.statusStep);
  });
  setInterval(() => { // the clocks tick
    const now = window.forgeAttempts.now();
    root.querySelectorAll(".elapsed").forEach((el) => { el.textContent = " " + elapsed(now - Number(el.dataset.since)); });
  }, 1000);
})();
