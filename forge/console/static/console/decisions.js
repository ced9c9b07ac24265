// The run page's approval cards follow the run for everyone viewing it: each batch of run events with an approval
// in it (asked, decided, expired) reads this person's cards again, so one who may not decide sees the card and
// why, and one who may sees the form, without a reload. A card already shown is kept (a comment being typed
// survives); a card no longer pending goes.
(function () {
  "use strict";
  const box = document.getElementById("decisions");
  if (!box || !box.dataset.url) return;
  const state = (window.forgeDecisions = { reads: 0 });
  let reading = null;
  let again = false;

  function merge(fresh) {
    const kept = new Map([...box.children].filter((c) => c.dataset.key).map((c) => [c.dataset.key, c]));
    const wanted = [...fresh.children].map((c) => kept.get(c.dataset.key) || document.importNode(c, true));
    const keep = new Set(wanted);
    [...box.children].forEach((c) => { if (!keep.has(c)) c.remove(); });
    wanted.forEach((card, i) => {
      if (box.children[i] !== card) box.insertBefore(card, box.children[i] || null);
      if (window.htmx && !kept.has(card.dataset.key)) window.htmx.process(card); // its form's hx- attributes
    });
  }

  function read() {
    if (reading) { again = true; return; } // one read at a time; events meanwhile read once more after it
    reading = fetch(box.dataset.url, { credentials: "same-origin" })
      .then((r) => (r.ok ? r.text() : Promise.reject(r.status)))
      .then((html) => {
        const fresh = new DOMParser().parseFromString(html, "text/html").getElementById("decisions");
        if (fresh) merge(fresh);
        state.reads += 1;
      })
      .catch(() => {}) // the next approval event reads again
      .finally(() => {
        reading = null;
        if (again) { again = false; read(); }
      });
  }

  document.addEventListener("forge:events", (e) => {
    if (e.detail.events.some((event) => event.kind === "approval")) read();
  });
  // Back from a lost socket the page may have been given a snapshot instead of the events missed: read once.
  const badge = document.getElementById("live");
  let lost = false;
  if (badge) {
    new MutationObserver(() => {
      if (badge.dataset.state === "live" && lost) read();
      lost = badge.dataset.state === "reconnecting" || badge.dataset.state === "stale";
    }).observe(badge, { attributes: true, attributeFilter: ["data-state"] });
  }
})();
