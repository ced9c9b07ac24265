// The new-workflow page: using a choice's field (an example, a file, pasted text) chooses it.
for (const choice of document.querySelectorAll(".new-workflow .choice")) {
  const radio = choice.querySelector("input[type=radio]");
  for (const field of choice.querySelectorAll("select, textarea, input[type=file]")) {
    for (const kind of ["focus", "change", "input"]) field.addEventListener(kind, () => { radio.checked = true; });
  }
}
