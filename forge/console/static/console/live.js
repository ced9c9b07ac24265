// The list pages' live indicator: what htmx's ws extension says of the page's socket (ws/live/), shown on
// each [data-live-indicator]. What the socket brings (the badge, a fresh read of the page's live parts) is
// htmx's to apply: forge/console/watch.py writes it.
(function () {
  "use strict";
  const WORDS = { connecting: "connecting…", live: "live", reconnecting: "reconnecting…", stale: "not live: reload the page" };
  let opened = false;

  function show(state) {
    document.querySelectorAll("[data-live-indicator]").forEach((el) => {
      el.dataset.state = state;
      el.textContent = WORDS[state];
    });
  }

  document.addEventListener("htmx:wsConnecting", () => show(opened ? "reconnecting" : "connecting"));
  document.addEventListener("htmx:wsOpen", () => { opened = true; show("live"); });
  // The extension tries again after an abnormal close (1006, 1011 to 1013); any other close is for good
  // (4403: the session ended or may no longer watch).
  document.addEventListener("htmx:wsClose", (e) => {
    const code = e.detail.event.code;
    show([1006, 1011, 1012, 1013].includes(code) ? "reconnecting" : "stale");
  });
})();
