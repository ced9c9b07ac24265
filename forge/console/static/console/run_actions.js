// The run header's clock, deadline and main button. The clock ticks while the run is live and stops at the time of
// the run's last event; the deadline counts down to the document's timeout and, once the run ended, says whether
// the deadline stopped it; the main button restarts an ended run from the step selected, or from its failed step.
(function () {
  "use strict";
  const TERMINAL = new Set(["completed", "failed", "cancelled"]);
  const clock = document.getElementById("run-duration");
  const status = document.getElementById("run-status");
  const actions = document.getElementById("run-actions");
  const main = document.getElementById("run-main-action");
  const again = document.getElementById("run-again");
  const skew = Date.parse(clock.dataset.now) - Date.now(); // the server's clock minus this one
  const start = Date.parse(clock.dataset.start);
  let end = clock.dataset.end ? Date.parse(clock.dataset.end) : null;
  let timer = 0;
  const deadline = document.getElementById("run-deadline");
  const due = deadline?.dataset.deadline ? Date.parse(deadline.dataset.deadline) : null;

  // The same words as run_head.duration_text.
  function words(seconds, ticking) {
    if (seconds < 10 && !ticking) return Math.max(0, seconds).toFixed(1) + " s";
    const s = Math.max(0, Math.floor(seconds));
    const h = Math.floor(s / 3600), m = Math.floor((s % 3600) / 60), r = s % 60;
    const two = (n) => String(n).padStart(2, "0");
    if (h) return h + " h " + two(m) + " min " + two(r) + " s";
    if (m) return m + " min " + two(r) + " s";
    return r + " s";
  }

  function tick() {
    clock.textContent = words(((end ?? Date.now() + skew) - start) / 1000, end === null);
    if (due !== null && end === null) {
      const seconds = Math.round((due - (Date.now() + skew)) / 1000);
      deadline.querySelector(".deadline-left").textContent =  // the words of countdown.js, loaded before
        seconds > 0 ? "deadline in " + window.forgeTimeLeft(seconds) : "deadline passed: the run is being stopped";
    }
  }

  // The run ended: its deadline either stopped it (run_timeout) or no longer matters.
  function endDeadline(code) {
    if (!deadline) return;
    if (code === "run_timeout") {
      const timeout = deadline.dataset.timeout;
      deadline.textContent = "stopped at its deadline" + (timeout ? " (timeout " + timeout + ")" : "");
      deadline.classList.add("error");
    } else if (due !== null) {
      deadline.hidden = true;
    }
  }

  function stop(at) {
    if (end !== null) return;
    end = at;
    clearInterval(timer);
    clock.dataset.end = new Date(end).toISOString();
    document.getElementById("run-duration-live")?.remove();
    tick();
  }

  // The first step that failed, not one blocked by it ("not run: upstream failed").
  function failedStep() {
    for (const [id, node] of window.forgeRun.nodes) {
      if ((node.status === "failed" || node.status === "timed_out") && node.error_code !== "upstream_failed") return id;
    }
    return "";
  }

  const ended = () => TERMINAL.has(window.forgeRun.runStatus);

  function showMain() {
    if (!main) return;
    const selected = window.forgeRun.selected || "";
    const failed = failedStep();
    const step = selected || failed;
    main.hidden = !(ended() && step);
    if (step) {
      main.href = actions.dataset.restartUrl + "?step=" + encodeURIComponent(step);
      main.textContent = selected ? "Restart from " + selected : "Restart from the failed step (" + failed + ")";
    }
    again?.classList.toggle("secondary", !main.hidden);
  }

  document.addEventListener("forge:events", (e) => {
    for (const event of e.detail.events) {
      if (event.kind === "run" && TERMINAL.has(event.data.status)) {
        stop(Date.parse(event.at));
        endDeadline(event.data.error_code);
      }
    }
    showMain();
  });
  document.addEventListener("forge:select", showMain);
  // A reconnect's snapshot says how a run that ended meanwhile ended.
  document.addEventListener("forge:snapshot", (e) => {
    const run = e.detail.run;
    if (run && TERMINAL.has(run.status)) endDeadline(run.error_code);
  });
  // A run seen ended by a reconnect's snapshot (no events) stops the clock too.
  new MutationObserver(() => { if (ended()) { stop(Date.now() + skew); showMain(); } })
    .observe(status, { childList: true, characterData: true, subtree: true });

  if (end === null) timer = setInterval(tick, 1000);
  tick();
  showMain();
})();
