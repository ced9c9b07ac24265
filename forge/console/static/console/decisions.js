// The run page's approval cards are htmx's (decisions.html): this says when to read them again, by
// "forge:approvals" on document, so everyone watching sees a card and why, or its form, without a reload.
// When: a batch of the run's events holds an approval (asked, decided, expired: a cancelled run's expire), or
// a snapshot replaced events missed while the socket was away.
(function () {
  "use strict";
  const read = () => document.dispatchEvent(new CustomEvent("forge:approvals"));
  document.addEventListener("forge:events", (e) => {
    if (e.detail.events.some((event) => event.kind === "approval")) read();
  });
  document.addEventListener("forge:snapshot", read);
})();
