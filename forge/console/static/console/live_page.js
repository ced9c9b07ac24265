// Every page's live notices (ws/live/): the top bar's approvals count, and for a page whose parts are marked
// data-live="runs" or data-live="approvals", a fresh read of the page when that topic changed. The page
// swaps in only those parts; a part whose children carry data-key keeps the children it still lists, so a
// comment half typed in the inbox survives a new approval arriving above it.
(function () {
  "use strict";
  const badge = document.getElementById("approvals-badge");
  if (!badge) return;
  const topics = document.body.dataset.liveTopics || "";
  const live = (window.forgeLive = { notices: 0, refreshes: 0, connected: false });
  let retry = 0;
  let reading = null;
  let again = false;

  function merge(old, fresh) {
    const kept = new Map([...old.children].filter((c) => c.dataset.key).map((c) => [c.dataset.key, c]));
    const wanted = [...fresh.children].map((c) => (c.dataset.key && kept.get(c.dataset.key)) || document.importNode(c, true));
    const keep = new Set(wanted);
    [...old.children].forEach((c) => { if (!keep.has(c)) c.remove(); });
    wanted.forEach((node, i) => { if (old.children[i] !== node) old.insertBefore(node, old.children[i] || null); });
  }

  function refresh(topic) {
    if (!document.querySelector('[data-live="' + topic + '"]')) return;
    if (reading) { again = true; return; } // one read at a time; a notice meanwhile reads once more after it
    reading = fetch(location.href, { credentials: "same-origin" })
      .then((r) => (r.ok ? r.text() : Promise.reject(r.status)))
      .then((html) => {
        const page = new DOMParser().parseFromString(html, "text/html");
        document.querySelectorAll("[data-live]").forEach((old) => {
          const fresh = page.getElementById(old.id);
          if (!fresh) return;
          if (fresh.querySelector(":scope > [data-key]") || old.querySelector(":scope > [data-key]")) merge(old, fresh);
          else old.replaceWith(document.importNode(fresh, true));
        });
        live.refreshes += 1;
      })
      .catch(() => {})
      .finally(() => {
        reading = null;
        if (again) { again = false; refresh(topic); }
      });
  }

  function connect() {
    const scheme = location.protocol === "https:" ? "wss://" : "ws://";
    const socket = new WebSocket(scheme + location.host + "/ws/live/?topics=" + encodeURIComponent(topics));
    socket.onopen = () => { retry = 0; live.connected = true; };
    socket.onmessage = (e) => {
      const notice = JSON.parse(e.data);
      if (notice.type !== "changed") return;
      live.notices += 1;
      if (notice.topic === "approvals") badge.textContent = notice.count;
      refresh(notice.topic);
    };
    socket.onclose = (e) => {
      live.connected = false;
      if (e.code === 4403) return; // not allowed: nothing to wait for
      retry = Math.min(retry + 1, 6);
      setTimeout(connect, 250 * 2 ** retry);
    };
  }
  connect();
})();
