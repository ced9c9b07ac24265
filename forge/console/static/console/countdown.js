// Time left before each approval expires, every second.
(function () {
  "use strict";
  function tick() {
    const now = Date.now();
    document.querySelectorAll(".countdown[data-expires]").forEach((el) => {
      const left = Math.round((Date.parse(el.dataset.expires) - now) / 1000);
      if (left <= 0) { el.textContent = "expired"; el.classList.add("error"); return; }
      const h = Math.floor(left / 3600), m = Math.floor((left % 3600) / 60), s = left % 60;
      el.textContent = (h ? h + "h " : "") + (h || m ? m + "m " : "") + s + "s left";
    });
  }
  tick();
  setInterval(tick, 1000);
})();
