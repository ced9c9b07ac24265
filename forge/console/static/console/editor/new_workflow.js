// The new-workflow page: choosing an example, a file or typing YAML chooses that way to start (tabbing past a
// field does not).
for (const choice of document.querySelectorAll(".new-workflow .choice")) {
  const radio = choice.querySelector("input[type=radio]");
  for (const field of choice.querySelectorAll("select, textarea, input[type=file]")) {
    for (const kind of ["change", "input"]) field.addEventListener(kind, () => { radio.checked = true; });
  }
}
