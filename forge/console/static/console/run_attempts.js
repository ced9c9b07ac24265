// Every step's attempts and waits on the run's clock, for the Gantt and the status list: read once from the
// server (forge/runs/reads/attempts.py), then kept up to date from the run's events ("forge:events") by the same
// rules, so a burst of events never fetches it again. Tells its readers "forge:attempts" ({steps}: ids changed).
(function () {
  "use strict";
  const root = document.getElementById("run-panes");
  if (!root) return;
  const WAIT_NAMES = { queued: "queue", redispatch: "queue", retry: "backoff", gate_retry: "backoff",
                       approval: "approval", escalation: "escalation", hold: "hold", child: "sub-run",
                       reply: "reply" };
  const TERMINAL = new Set(["completed", "failed", "skipped", "cancelled", "timed_out"]);
  const model = (window.forgeAttempts = { ready: false, steps: new Map(), order: [], start: 0, end: null,
                                          status: "", skew: 0, now: () => Date.now() + model.skew });
  let early = []; // events that came before the first picture
  let lastId = 0;

  const tell = (steps) => document.dispatchEvent(new CustomEvent("forge:attempts", { detail: { steps } }));
  const ms = (iso) => (iso ? Date.parse(iso) : null);

  function openAttempt(s) { const a = s.attempts[s.attempts.length - 1]; return a && a.end === null ? a : null; }
  function openWait(s) { const w = s.waits[s.waits.length - 1]; return w && w.end === null ? w : null; }

  function applyStep(s, data, at) {
    const n = data.attempt || 0;
    s.status = data.status;
    s.word = data.word || data.status; // the server's word ("not run: upstream failed")
    s.neverRan = data.error_code === "upstream_failed" && data.status === "failed";
    if (data.status === "running") {
      const w = openWait(s); if (w) w.end = at;
      const a = s.attempts.findLast((x) => x.n === n);
      // A reply gate's next iteration is a piece of its own, as attempts.py folds it.
      if (!a || a.status === "asked") s.attempts.push({ n, start: at, end: null, status: "running", blocked: false });
      else if (a.end !== null && a.blocked) Object.assign(a, { start: at, end: null, status: "running", blocked: false });
      return;
    }
    const a = openAttempt(s);
    if (a) {
      a.end = at;
      if (TERMINAL.has(data.status) && data.status !== "failed") a.status = data.status;
      else if (data.wait === "reply") a.status = "asked";
      else if ((data.wait === "gate_retry" || data.wait === "hold") && a.held) { a.status = data.wait === "hold" ? "held" : "blocked"; a.blocked = true; }
      else a.status = data.error || data.status === "failed" ? "failed" : data.status;
    }
    const kind = data.wait ? WAIT_NAMES[data.wait] || data.wait : null;
    let w = openWait(s);
    if (w && w.kind !== kind) { w.end = at; w = null; }
    if (kind && !w) s.waits.push({ kind, start: at, end: null, after: s.attempts.length ? s.attempts[s.attempts.length - 1].n : 0 });
    if (TERMINAL.has(data.status)) { w = openWait(s); if (w) w.end = at; }
  }

  function apply(events) {
    const changed = new Set();
    for (const e of events) {
      if (e.id <= lastId) continue;
      lastId = e.id;
      const at = ms(e.at);
      if (e.kind === "step" && model.steps.has(e.step)) {
        applyStep(model.steps.get(e.step), e.data, at);
        changed.add(e.step);
      } else if (e.kind === "governance" && model.steps.has(e.step)) {
        const a = model.steps.get(e.step).attempts.find((x) => x.n === e.data.attempt);
        if (a && (e.data.outcome === "block" || e.data.outcome === "hold")) a.held = true;
      } else if (e.kind === "run") {
        model.status = e.data.status;
        if (TERMINAL.has(e.data.status)) model.end = at;
        changed.add("");
      }
    }
    if (changed.size) tell(changed);
  }

  document.addEventListener("forge:events", (e) => {
    if (model.ready) apply(e.detail.events); else early.push(...e.detail.events);
  });

  function read() {
    fetch(root.dataset.attempts, { credentials: "same-origin" })
      .then((r) => (r.ok ? r.json() : Promise.reject(r.status)))
      .then((data) => {
        model.skew = Date.parse(data.now) - Date.now();
        model.start = ms(data.started_at);
        model.end = ms(data.finished_at);
        model.status = data.status;
        model.order = [];
        model.steps = new Map();
        for (const s of data.steps) {
          model.order.push(s.id);
          model.steps.set(s.id, {
            id: s.id, status: s.status, word: s.word, neverRan: s.never_ran,
            attempts: s.attempts.map((a) => ({ n: a.n, start: ms(a.start), end: ms(a.end), status: a.status,
                                               blocked: a.status === "blocked" || a.status === "held" })),
            waits: s.waits.map((w) => ({ kind: w.kind, start: ms(w.start), end: ms(w.end), after: w.after })),
          });
        }
        lastId = data.last_event_id;
        model.ready = true;
        const pending = early; early = [];
        tell(new Set(model.order));
        apply(pending);
      })
      .catch(() => { root.dataset.failed = "true"; tell(new Set()); });
  }
  // A backlog too long to replay was replaced by the rows' state: what was missed is read again, once.
  document.addEventListener("forge:snapshot", () => { model.ready = false; early = []; read(); });
  read();
})();
