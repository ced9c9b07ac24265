// On a narrow screen the top bar's links fold behind a Menu button. Without this script they stay shown
// (wrapped), so a page works without JavaScript too.
(() => {
  const bar = document.querySelector(".topbar");
  const button = bar && bar.querySelector(".menu-button");
  if (!button) return;
  bar.classList.add("folds");
  const show = (open) => {
    bar.classList.toggle("open", open);
    button.setAttribute("aria-expanded", String(open));
  };
  button.addEventListener("click", () => show(!bar.classList.contains("open")));
  document.addEventListener("keydown", (e) => {
    if (e.key === "Escape" && bar.classList.contains("open")) { show(false); button.focus(); }
  });
})();
