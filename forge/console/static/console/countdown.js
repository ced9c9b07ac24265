// Time left before each approval expires, every second.
(function () {
  "use strict";
  // Whole seconds left in the countdowns' words, "1h 0m 5s", "4m 12s" (as run_head.left_text); the run
  // header's deadline (run_actions.js) says it with these too.
  function timeLeft(left) {
    const h = Math.floor(left / 3600), m = Math.floor((left % 3600) / 60), s = left % 60;
    return (h ? h + "h " : "") + (h || m ? m + "m " : "") + s + "s";
  }
  window.forgeTimeLeft = timeLeft;

  function tick() {
    const now = Date.now();
    document.querySelectorAll(".countdown[data-expires]").forEach((el) => {
      const left = Math.round((Date.parse(el.dataset.expires) - now) / 1000);
      if (left <= 0) { el.textContent = "expired"; el.classList.add("error"); return; }
      el.textContent = timeLeft(left) + " left";
    });
  }
  tick();
  setInterval(tick, 1000);
})();
