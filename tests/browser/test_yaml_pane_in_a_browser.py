"""The editor's YAML pane (console/editor/yaml_pane.js) in Chromium, as a person uses it: the schema lint marks a
typo with its message, completion offers the schema's keys and the server's lists, undo takes back typing and a
patch from the graph (one step each, a hundred deep), the server's problems sit on their lines, and the cursor
says which step it is in. Under the console's Content-Security-Policy, with nothing refused."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.browser.yaml_pane_page import PanePage, workflow

TEXT = """\
# vendor review: comments stay
name: vendor_review
steps:
  - id: intake
    agent: shell
    command: echo hello
  - id: review   # the second step
    agent: shell
    command: echo review
    depends_on: [intake]
"""
DEADLINE_MS = 30_000


@pytest.fixture(scope="module")
def pane_page():
    served = PanePage()
    yield served
    served.close()


@pytest.fixture
def page(browser, pane_page, tmp_path):
    context = browser.new_context(viewport={"width": 1100, "height": 700})
    refused: list[str] = []
    context.on("console", lambda m: refused.append(m.text) if m.type == "error" else None)
    context.add_init_script("document.addEventListener('securitypolicyviolation', (e) => "
                            "console.error(`CSP ${e.effectiveDirective} refused ${e.blockedURI}`));")
    page = context.new_page()
    page.set_default_timeout(DEADLINE_MS)
    pane_page.open(page, TEXT)
    page.shots = Path(os.environ.get("FORGE_SCREENSHOTS") or tmp_path)
    yield page
    page.evaluate("new Promise((done) => setTimeout(done, 0))")  # let queued violation reports arrive
    context.close()
    assert not refused, "the page logged errors:\n" + "\n".join(refused)


def text(page) -> str:
    return page.evaluate("window.pane.getText()")


def end_of_line(page, number: int) -> None:
    page.locator(".cm-line").nth(number - 1).click()
    page.keyboard.press("End")


def lint_message(page, marker: str) -> str:
    """Hovers the lint gutter's `marker` (error or warning) and returns what its tooltip says."""
    page.locator(f".cm-lint-marker-{marker}").first.hover()
    tooltip = page.locator(".cm-tooltip-lint")
    tooltip.wait_for()
    return tooltip.inner_text()


def test_a_typo_in_a_key_is_marked_on_its_line_with_a_message(page):
    end_of_line(page, 6)
    page.keyboard.press("Enter")
    page.keyboard.type("dependson: [x]")
    page.locator(".cm-lint-marker-error").wait_for()
    said = lint_message(page, "error")
    assert "unknown key `dependson` in a step" in said and "did you mean `depends_on`" in said
    marked = page.locator(".cm-lintRange-error")
    assert marked.count() == 1 and marked.inner_text() == "dependson"
    page.screenshot(path=str(page.shots / "yaml_pane_lint.png"))

    page.keyboard.press("Home")  # the fix takes the marker away
    page.keyboard.press("Shift+End")
    page.keyboard.type("depends_on: [intake]")
    page.locator(".cm-lint-marker-error").wait_for(state="detached")


def test_wrong_values_are_marked_as_the_schema_says(page):
    end_of_line(page, 6)
    page.keyboard.press("Enter")
    page.keyboard.type("on_failure: explode")
    page.locator(".cm-lint-marker-error").wait_for()
    assert "`on_failure` must be one of: " in lint_message(page, "error")
    page.keyboard.press("Home")
    page.keyboard.press("Shift+End")
    page.keyboard.type("retry: {max_retries: -1}")
    page.wait_for_function("() => document.querySelector('.cm-lintRange-error')?.textContent === '-1'")
    assert "`max_retries` must be at least 0" in lint_message(page, "error")


@pytest.mark.parametrize("steps", [
    "steps:\n- id: a\n  agnt: shell\n",  # items at the key's own indentation
    "steps: [{id: a, agnt: shell}]\n",  # flow style
    "steps:\n  - &one\n    id: a\n    agnt: shell\n  - <<: *one\n    id: b\n",  # anchors, a merge
])
def test_the_document_and_each_style_of_steps_are_linted(page, pane_page, steps):
    pane_page.open(page, "# top\ncolour: red\n" + steps)
    page.locator(".cm-lintRange-error", has_text="agnt").wait_for()
    markers = page.locator(".cm-lint-marker-error")
    assert markers.count() == 2  # the line of `colour`, the line of `agnt`
    markers.first.hover()
    said = page.locator(".cm-tooltip-lint").inner_text()
    assert "unknown key `colour` in the document" in said and "the document lacks `name`" in said
    page.mouse.move(600, 650)
    page.locator(".cm-tooltip-lint").wait_for(state="detached")
    markers.last.hover()
    assert "unknown key `agnt` in a step (did you mean `agent`?)" in page.locator(".cm-tooltip-lint").inner_text()


def test_completion_offers_schema_keys_and_the_servers_names(page):
    page.evaluate("window.pane.setSteps([{id: 'intake', lines: [4, 6]}, {id: 'review', lines: [7, 10]}])")
    end_of_line(page, 6)
    page.keyboard.press("Enter")
    page.keyboard.type("dep")
    choose(page, "depends_on")
    page.keyboard.type("[int")
    choose(page, "intake")
    assert "    depends_on: [intake]\n" in text(page)

    end_of_line(page, 9)  # `    agent: shell` of review, a line lower now
    for _ in range(len("shell")):
        page.keyboard.press("Backspace")
    page.keyboard.type("cla")
    choose(page, "claude_code")
    assert "    agent: claude_code\n" in text(page)

    end_of_line(page, 11)  # review's last line; a new one asks for the keys a step may still take
    page.keyboard.press("Enter")
    page.keyboard.press("Control+Space")
    options = page.locator(".cm-tooltip-autocomplete li")
    options.first.wait_for()
    offered = options.all_inner_texts()
    assert "retry" in offered and "on_failure" in offered and "agent" not in offered and "steps" not in offered


def choose(page, label: str) -> None:
    """Clicks `label` in the completion list once it offers it."""
    page.locator(".cm-tooltip-autocomplete li", has_text=label).first.click()
    page.locator(".cm-tooltip-autocomplete").wait_for(state="detached")


def test_a_new_line_is_indented_as_the_yaml_around_it(page):
    end_of_line(page, 3)  # `steps:` opens a block
    page.keyboard.press("Enter")
    page.keyboard.type("- id: first")
    page.keyboard.press("Enter")  # the item's mapping goes on at its key's column
    page.keyboard.type("retry:")
    page.keyboard.press("Enter")
    page.keyboard.type("max_retries: 1")
    assert "steps:\n  - id: first\n    retry:\n      max_retries: 1\n  - id: intake\n" in text(page)


def test_undo_takes_back_typing_and_a_patch_is_one_undo_step(page):
    end_of_line(page, 10)
    page.keyboard.type(", review")
    assert text(page) != TEXT
    page.keyboard.press("Control+z")
    page.wait_for_function("(want) => window.pane.getText() === want", arg=TEXT)

    # A patch from the graph: two ranges at once (a rename: the id and its reference), as one transaction.
    at = TEXT.index("intake")
    again = TEXT.index("[intake]") + 1
    page.evaluate("(changes) => window.pane.applyChanges(changes)", [
        {"from": at, "to": at + 6, "insert": "start"}, {"from": again, "to": again + 6, "insert": "start"}])
    renamed = TEXT.replace("intake", "start")
    assert text(page) == renamed
    page.keyboard.press("Control+z")
    page.wait_for_function("(want) => window.pane.getText() === want", arg=TEXT)
    page.keyboard.press("Control+Shift+z")
    page.wait_for_function("(want) => window.pane.getText() === want", arg=renamed)


def test_a_hundred_and_twenty_patches_are_undone_one_by_one(page):
    end = len(TEXT)
    for i in range(120):
        page.evaluate("(change) => window.pane.applyChanges([change])", {"from": end, "to": end, "insert": "#\n"})
        end += 2
    page.locator(".cm-content").click()
    for _ in range(120):
        page.keyboard.press("Control+z")
    page.wait_for_function("(want) => window.pane.getText() === want", arg=TEXT)


def test_server_problems_sit_on_their_lines_with_code_and_message(page):
    page.evaluate("window.pane.setSteps([{id: 'intake', lines: [4, 6]}, {id: 'review', lines: [7, 10]}])")
    page.evaluate("""window.pane.setProblems([
      {code: 'unknown_step', message: 'depends on `nowhere`, which is no step', step: 'review', line: 10,
       column: 18, severity: 'error'},
      {code: 'unused_output', message: '<b>not markup</b>', step: 'intake', line: null, column: null,
       severity: 'warning'}])""")
    page.locator(".cm-lint-marker-error").wait_for()
    said = lint_message(page, "error")
    assert "depends on `nowhere`, which is no step" in said and "unknown_step" in said
    assert page.locator(".cm-lintRange-error").inner_text() == "intake"
    page.locator(".cm-lint-marker-warning").wait_for()
    page.mouse.move(600, 650)
    assert "<b>not markup</b>" in lint_message(page, "warning")  # shown as text, never as markup
    assert page.locator(".cm-lintRange-warning").inner_text() == "id: intake"  # no line: its step's first
    page.screenshot(path=str(page.shots / "yaml_pane_problems.png"))


HOLD_PAUSES = """async () => {
  window.schemaAgain = await (await fetch("/editor/schema.json")).json();
  window.realTimeout = window.setTimeout;
  window.held = [];
  window.setTimeout = (fn, ms, ...rest) => (ms ? window.realTimeout(fn, ms, ...rest) : window.held.push(fn));
}"""
RUN_HELD_BUT_FIRST = """async (runs) => {
  while (window.pane.lintStats.runs < runs) {
    while (window.held.length > 1) window.held.pop()();
    await new Promise((next) => window.realTimeout(next, 1));
  }
}"""


def test_problems_set_while_a_long_lint_is_paused_stay_when_it_ends(page, pane_page):
    """A new schema starts a long lint of a big text; the server's problems arrive while it is paused between
    slices and lint again at once. The test holds the first run's pause so that it ends last: the problems stay."""
    pane_page.open(page, workflow(2_000))
    page.wait_for_function("() => window.pane.lintStats.runs >= 1")
    runs = page.evaluate("window.pane.lintStats.runs")
    page.evaluate(HOLD_PAUSES)
    page.evaluate("""() => {
      window.pane.setSchema(window.schemaAgain);
      window.pane.setProblems([{code: 'unknown_step', message: 'depends on `nowhere`, which is no step',
        step: 'step_1', line: 17, column: 5, severity: 'error'}]);
    }""")
    assert page.evaluate("window.held.length") == 2, "both runs are paused"
    page.evaluate(RUN_HELD_BUT_FIRST, runs + 1)  # the newer run ends first
    page.locator(".cm-lint-marker-error").wait_for()
    page.evaluate("() => { window.setTimeout = window.realTimeout; window.held.pop()(); }")  # then the older
    page.wait_for_function("(runs) => window.pane.lintStats.runs === runs", arg=runs + 2)
    page.evaluate("new Promise((done) => requestAnimationFrame(() => requestAnimationFrame(done)))")
    assert page.locator(".cm-lint-marker-error").count() == 1
    assert "depends on `nowhere`, which is no step" in lint_message(page, "error")


def test_the_cursor_says_which_step_it_is_in(page):
    page.evaluate("window.pane.setSteps([{id: 'intake', lines: [4, 6]}, {id: 'review', lines: [7, 10]}])")
    end_of_line(page, 9)
    page.wait_for_function("() => window.told.steps.at(-1) === 'review'")
    end_of_line(page, 5)
    page.wait_for_function("() => window.told.steps.at(-1) === 'intake'")
    end_of_line(page, 2)
    page.wait_for_function("() => window.told.steps.at(-1) === null")
    told = page.evaluate("window.told.steps.length")
    page.evaluate("window.pane.selectLines(7, 10)")  # the graph chose review: no echo back to it
    assert page.evaluate("window.getSelection().toString()").startswith("  - id: review")
    assert page.evaluate("window.told.steps.length") == told


def test_search_folding_and_read_only(page):
    page.locator(".cm-content").click()
    page.keyboard.press("Control+f")
    page.locator(".cm-search input[name=search]").fill("review")
    page.keyboard.press("Enter")
    page.locator(".cm-searchMatch").first.wait_for()
    page.keyboard.press("Escape")
    gutter = page.locator(".cm-foldGutter").bounding_box()
    intake = page.locator(".cm-line").nth(3).bounding_box()  # `  - id: intake`: its fold marker
    page.mouse.click(gutter["x"] + gutter["width"] / 2, intake["y"] + intake["height"] / 2)
    page.locator(".cm-foldPlaceholder").wait_for()  # its block folds by its indentation: review's stays in view
    shown = page.locator(".cm-content").inner_text()
    assert "echo hello" not in shown and "  - id: intake" in shown and "echo review" in shown
    page.evaluate("window.pane.setReadOnly(true)")
    page.locator(".cm-content").click()
    page.keyboard.type("nope")
    assert "nope" not in text(page)


@pytest.mark.parametrize("hostile", [
    "name: x\nsteps: " + "[" * 5000 + "]" * 5000 + "\n" + "a: &a [1, 2]\n" * 2000,  # deep, and aliases
    "name: x\nsteps:\n" + "  - id: s\n    command: " + "y" * 1_100_000 + "\n",  # past the loader's 1 MiB
])
def test_hostile_text_never_stalls_the_pane(page, pane_page, hostile):
    pane_page.open(page, hostile)
    page.keyboard.press("Control+Home")
    page.locator(".cm-content").focus()
    page.keyboard.type("# typed\n")
    page.wait_for_function("() => window.pane.getText().startsWith('# typed')")
    page.wait_for_function("() => window.pane.lintStats.runs > 0")
    assert page.evaluate("window.pane.lintStats.longestSlice") < 2000
