"""The workflow editor as people use it, in Chromium against daphne and a real cluster (issue 20): open an example,
type a bad key and see it in the problems list and the lint gutter, fix it and see it go, save with a message and
find the version in the history with its diff; make a workflow from blank by clicking, undo and redo across the
panes, save it and run it to completion; two people save the same workflow and the second merges; a read-only
person meets no edit control and a 403 at the editor's address."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from playwright.sync_api import expect

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
WAIT = 30_000  # ms: a busy CI machine validates and saves slowly
READY = "#editor[data-ready=true]"


def source(deployment, workflow: str, number: int | None = None) -> str:
    """A saved version's text (the latest when no number), as the database holds it."""
    which = f".get(number={number})" if number else ".order_by('-number').first()"
    return deployment.query("from forge.workflows.models import WorkflowVersion\n"
                            f"result = WorkflowVersion.objects.filter(workflow__name={workflow!r}){which}.source")


def text(page) -> str:
    return page.evaluate("() => window.forgeEditor.text()")


def open_editor(console, page, workflow: str) -> None:
    page.goto(f"{console.url}/workflows/{workflow}/")
    page.click("#edit-link")
    page.wait_for_selector(READY, timeout=WAIT)


def go_to_line(page, line: int) -> None:
    """The cursor at the start of `line` of the YAML pane, by the keyboard as a person moves it."""
    page.click(".cm-content")
    page.keyboard.press("Control+Home")
    for _ in range(line - 1):
        page.keyboard.press("ArrowDown")
    page.keyboard.press("Home")


def rewrite_line(page, line: int, new: str) -> None:
    go_to_line(page, line)
    page.keyboard.press("Shift+End")
    page.keyboard.press("Delete")
    page.keyboard.type(new)


def valid(page) -> None:
    expect(page.locator("#validity")).to_have_text(re.compile(r"^Valid"), timeout=WAIT)


def save(page, message: str) -> None:
    expect(page.locator("#save")).to_be_enabled(timeout=WAIT)
    page.click("#save")
    expect(page.locator("#save-dialog")).to_be_visible()
    page.fill("#save-message", message)
    page.click("#save-confirm")


def line_of(text_: str, start: str) -> int:
    return next(n for n, line in enumerate(text_.splitlines(), 1) if line.startswith(start))


def test_a_bad_key_shows_in_the_list_and_the_gutter_goes_when_fixed_and_the_save_is_in_the_history(console, browser):
    page = console.login(browser, "olive")
    open_editor(console, page, "shell_pipeline")
    original = source(console.deployment, "shell_pipeline")
    assert text(page) == original
    valid(page)
    expect(page.locator("#save")).to_be_disabled()  # nothing to save: the draft is the saved version

    go_to_line(page, original.count("\n") + 1)  # the empty line after the last newline
    page.keyboard.type("bogus_key: 1")
    problem = page.locator("#problems button.problem[data-code=unknown_key]")
    expect(problem).to_have_count(1, timeout=WAIT)
    bad_line = original.count("\n") + 1
    expect(problem).to_contain_text(f"line {bad_line}")
    expect(problem).to_contain_text("bogus_key")
    expect(page.locator(".cm-gutter-lint .cm-lint-marker-error")).to_have_count(1, timeout=WAIT)
    expect(page.locator("#validity")).to_have_text(re.compile("not valid"))
    expect(page.locator("#save")).to_be_disabled()
    console.shot(page, "editor-bad-key")

    problem.click()  # goes to the line: it is selected, and the Delete key takes it away
    page.keyboard.press("Delete")
    expect(page.locator("#problems button.problem")).to_have_count(0, timeout=WAIT)
    expect(page.locator(".cm-gutter-lint .cm-lint-marker-error")).to_have_count(0, timeout=WAIT)
    valid(page)
    assert text(page) == original

    page.evaluate("""() => {  // when each typing request leaves: at most two a second, however fast the typing
      const fetch = window.fetch, sent = (window.textSent = []);
      window.fetch = (url, init) => {
        if (String(url).endsWith("/text")) sent.push(performance.now());
        return fetch(url, init);
      };
    }""")
    page.keyboard.type("# checked by olive\n", delay=40)
    valid(page)
    sent = page.evaluate("() => window.textSent")
    gaps = [later - earlier for earlier, later in zip(sent, sent[1:])]
    assert len(sent) >= 2 and all(gap >= 490 for gap in gaps), gaps  # 19 keys in 0.8 s: 2 or 3 requests, not 19

    page.reload()  # the draft is on the server: a reload finds the text, still to be saved
    page.wait_for_selector(READY, timeout=WAIT)
    assert text(page) == original + "# checked by olive\n"
    valid(page)
    save(page, "Say who checked it")
    expect(page.locator("#save-diff")).to_contain_text("+# checked by olive")
    expect(page.locator("#editor-said")).to_have_text(re.compile(r"Saved v2 of shell_pipeline\."), timeout=WAIT)
    assert source(console.deployment, "shell_pipeline", 2) == original + "# checked by olive\n"  # byte for byte
    expect(page.locator("#run")).to_have_text("Run v2")
    console.shot(page, "editor-saved")

    page.click("#editor-said a")  # "See its history"
    expect(page.locator("#version-diff")).to_have_attribute("data-ready", "true", timeout=WAIT)
    row = page.locator("#versions tr[data-version='2']")
    expect(row).to_contain_text("olive")
    expect(row).to_contain_text("Say who checked it")
    expect(page.locator("#diff-text .diff-add")).to_contain_text(["+# checked by olive"])
    console.shot(page, "editor-history")


def test_a_workflow_from_blank_by_clicking_undone_and_redone_saved_and_run_to_completion(console, browser):
    page = console.login(browser, "olive")
    page.goto(f"{console.url}/workflows/")
    page.click("#new-workflow")
    expect(page.locator("#source-blank")).to_be_checked()
    page.click("text=Open in the editor")
    page.wait_for_selector(READY, timeout=WAIT)
    blank = text(page)
    expect(page.locator("#problems button.problem[data-code=missing_field]")).to_have_count(1, timeout=WAIT)

    page.click("#palette button[data-kind='agent:mock']")  # the new step is chosen: the inspector shows it
    expect(page.locator("#problems button.problem")).to_have_count(0, timeout=WAIT)
    assert "- id: mock_1" in text(page)
    command = page.locator("#inspector [data-path=command]")
    expect(command).to_be_visible(timeout=WAIT)
    command.fill("say hello")
    command.press("Tab")  # a field is committed when it is left
    page.wait_for_function("() => window.forgeEditor.text().includes('say hello')", timeout=WAIT)
    with_step = text(page)

    page.click("#undo")  # each gesture is one step of the YAML pane's history, whichever pane made it
    page.wait_for_function("() => !window.forgeEditor.text().includes('say hello')", timeout=WAIT)
    assert "- id: mock_1" in text(page)
    page.click("#undo")
    page.wait_for_function("(blank) => window.forgeEditor.text() === blank", arg=blank, timeout=WAIT)
    expect(page.locator("#problems button.problem[data-code=missing_field]")).to_have_count(1, timeout=WAIT)
    page.locator("h1").click()  # outside every pane and field: the page's own Ctrl-Shift-Z
    page.keyboard.press("Control+Shift+Z")
    page.keyboard.press("Control+Shift+Z")
    page.wait_for_function("(want) => window.forgeEditor.text() === want", arg=with_step, timeout=WAIT)
    expect(page.locator("#problems button.problem")).to_have_count(0, timeout=WAIT)
    valid(page)
    save(page, "First version")
    expect(page.locator("#save-what")).to_have_text("A new workflow: every line is new.")
    expect(page.locator("#editor-said")).to_have_text(re.compile(r"Saved v1 of new_workflow\."), timeout=WAIT)
    assert source(console.deployment, "new_workflow", 1) == text(page)
    console.shot(page, "editor-new-saved")

    page.click("#run")
    expect(page.locator("#run-form")).to_be_visible()
    assert page.url.endswith("/workflows/new_workflow/#run")
    page.click("#run-form button[type=submit]")
    page.wait_for_url(re.compile(r"/runs/\d+/$"))
    run_id = int(page.url.rstrip("/").rsplit("/", 1)[1])
    assert console.deployment.finished(run_id)["status"] == "completed"


def saved_under_another(console, browser):
    """olive and adam open code_review's editor; olive saves a new description as v2, and adam writes his own on
    the same line of his draft (still based on v1): (olive's page, adam's page, v1's text, the line)."""
    olive, adam = console.login(browser, "olive"), console.login(browser, "adam")
    open_editor(console, olive, "code_review")
    open_editor(console, adam, "code_review")
    original = source(console.deployment, "code_review")
    line = line_of(original, "description:")
    rewrite_line(olive, line, "description: Olive's words")
    valid(olive)
    save(olive, "olive's description")
    expect(olive.locator("#editor-said")).to_have_text(re.compile(r"Saved v2"), timeout=WAIT)
    rewrite_line(adam, line, "description: Adam's words")
    return olive, adam, original, line


def test_the_second_save_merges_and_a_read_only_person_meets_no_edit_control(console, browser):
    olive, adam, original, line = saved_under_another(console, browser)
    first = line_of(original, "# Review a change")
    go_to_line(adam, first)
    adam.keyboard.type("# adam was here\n")  # a line nobody else changed: it merges by itself
    valid(adam)
    save(adam, "adam's description")
    merge = adam.locator("#merge")
    expect(merge).to_be_visible(timeout=WAIT)
    expect(merge.locator("h2")).to_have_text("v2 was saved since your draft began")
    expect(merge.locator(".merge-conflict")).to_have_count(1)
    expect(merge.locator("[data-side=theirs] mark")).to_have_text(["description: Olive's words\n"])
    expect(merge.locator("[data-side=mine] mark")).to_have_text(["description: Adam's words\n"])
    console.shot(adam, "editor-merge")
    merge.locator(".merge-conflict button", has_text="Take theirs").click()
    merge.locator("#merge-save").click()
    expect(adam.locator("#editor-said")).to_have_text(re.compile(r"Saved v3 of code_review\."), timeout=WAIT)
    saved = source(console.deployment, "code_review", 3)
    assert saved == ("# adam was here\n" + original).replace(
        original.splitlines()[line - 1], "description: Olive's words")
    assert text(adam) == saved
    expect(merge).to_be_hidden()

    april = console.login(browser, "april")
    april.goto(f"{console.url}/workflows/")
    expect(april.locator("#workflows")).to_be_visible()
    expect(april.locator("#new-workflow")).to_have_count(0)
    april.goto(f"{console.url}/workflows/code_review/")
    expect(april.locator("#history-link")).to_be_visible()
    expect(april.locator("#edit-link")).to_have_count(0)
    response = april.goto(f"{console.url}/workflows/code_review/edit/")
    assert response.status == 403
    expect(april.locator(".error-page .reason")).to_have_text("Forge says: You may not edit workflows.")
    april.goto(f"{console.url}/workflows/code_review/versions/")
    expect(april.locator("#versions tr[data-version='3']")).to_contain_text("adam's description")
    expect(april.locator("form.restore")).to_have_count(0)
    console.shot(april, "editor-read-only-history")


def tab_to(page, selector: str) -> None:
    """Focus `selector` with the Tab key alone, as a person without a mouse does. In the YAML pane Tab indents:
    Escape lets the next Tab leave it (twice when text is selected: the first Escape drops the selection)."""
    for _ in range(400):
        if page.evaluate("(s) => document.activeElement.matches(s)", selector):
            return
        if page.evaluate("() => !!document.activeElement.closest('.cm-content')"):
            page.keyboard.press("Escape")
            page.keyboard.press("Escape")
        page.keyboard.press("Tab")
    raise AssertionError(f"Tab never reached {selector}")


def test_add_connect_and_delete_steps_with_the_keyboard_alone(console, browser):
    page = console.login(browser, "olive")
    page.goto(f"{console.url}/workflows/new-workflow/")
    tab_to(page, "#new-workflow button[type=submit]")  # blank is chosen already
    page.keyboard.press("Enter")
    page.wait_for_selector(READY, timeout=WAIT)

    mock = "#palette button[data-kind='agent:mock']"
    tab_to(page, mock)
    assert page.evaluate("() => getComputedStyle(document.activeElement).outlineStyle") != "none"  # focus shows
    page.keyboard.press("Enter")
    page.wait_for_function("() => window.forgeEditor.state.selected === 'mock_1'", timeout=WAIT)
    page.keyboard.press("Enter")  # the next one goes after the selected step, and is selected in turn
    page.wait_for_function("() => window.forgeEditor.state.selected === 'mock_2'", timeout=WAIT)

    tab_to(page, "#inspector [data-path=depends_on]")
    page.keyboard.type("mock_1")
    page.keyboard.press("Enter")
    page.wait_for_function("() => window.forgeEditor.state.outline.edges.some((e) => e.from === 'mock_1'"
                           " && e.to === 'mock_2' && e.explicit)", timeout=WAIT)
    connected = text(page)
    assert "depends_on" in connected and "mock_1" in connected.split("id: mock_2", 1)[1]

    tab_to(page, "#graph [role=application]")
    page.keyboard.press("Delete")  # the selected step, mock_2
    page.wait_for_function("() => window.forgeEditor.state.outline.steps.map((s) => s.id).join() === 'mock_1'",
                           timeout=WAIT)
    page.keyboard.press("Control+Z")  # on the graph: the page's one history brings it back, connected
    page.wait_for_function("(want) => window.forgeEditor.text() === want", arg=connected, timeout=WAIT)
    page.wait_for_function("() => window.forgeEditor.state.outline.steps.length === 2", timeout=WAIT)
    expect(page.locator("#graph [data-editor-graph=delete]")).to_be_enabled(timeout=WAIT)  # chosen again
    expect(page.locator("#inspector")).to_contain_text("Step mock_2")
    console.shot(page, "editor-keyboard")

    draft = page.url
    page.once("dialog", lambda dialog: dialog.accept())  # "Discard your draft?"
    tab_to(page, "#discard")
    page.keyboard.press("Enter")
    page.wait_for_url(f"{console.url}/workflows/")  # never saved: back to the list, and the draft is gone
    assert page.goto(draft).status == 404


# A workflow a person wrote with notes everywhere: what the gestures do not touch must come back byte for byte.
COMMENTED = """# Release train: every line here is a person's note
name: release_train   # the train's name
description: Build, test and ship   # shown on the list
steps:
  # build first
  - id: build
    agent: mock
    command: make build   # the build

  # tests run on the build
  - id: test
    agent: mock
    command: 'make test'   # quoted on purpose
    depends_on: [build]   # explicit too

  # ship only what passed
  - id: ship
    agent: mock
    command: >-
      make ship
    depends_on:
      - test
# the end
"""


def test_gestures_on_a_commented_workflow_keep_every_untouched_line_byte_for_byte(console, browser):
    page = console.login(browser, "olive")
    page.goto(f"{console.url}/workflows/new-workflow/")
    page.fill("#yaml", COMMENTED)  # typing in it chooses "YAML I paste"
    expect(page.locator("#source-paste")).to_be_checked()
    page.click("text=Open in the editor")
    page.wait_for_selector(READY, timeout=WAIT)
    assert text(page) == COMMENTED
    valid(page)

    page.evaluate("""() => {  // every patch the page sends
      const fetch = window.fetch, sent = (window.patchesSent = []);
      window.fetch = (url, init) => { if (String(url).endsWith("/patch")) sent.push(JSON.parse(init.body).op); return fetch(url, init); };
    }""")

    # Move: a step dragged on the graph is placed there, and the YAML does not change.
    cy = "window.forgeEditor.graph.cy"
    page.wait_for_function(f"() => {cy}.getElementById('ship').length === 1"
                           " && document.getElementById('graph').dataset.layout === 'done'", timeout=WAIT)
    node = page.evaluate(f"() => {cy}.getElementById('ship').renderedPosition()")
    canvas = page.locator("#graph .editor-graph-canvas").bounding_box()
    x, y = canvas["x"] + node["x"], canvas["y"] + node["y"]
    with page.expect_response(lambda r: r.url.endswith("/placements") and r.request.method == "POST") as placed:
        page.mouse.move(x, y)
        page.mouse.down()
        page.mouse.move(x + 20, y + 40, steps=4)
        page.mouse.move(x + 40, y + 90, steps=4)
        page.mouse.up()
    assert placed.value.ok
    ship = page.evaluate(f"() => {cy}.getElementById('ship').position()")
    assert text(page) == COMMENTED

    go_to_line(page, line_of(COMMENTED, "  - id: test") + 1)  # the cursor in a step's block chooses it
    page.wait_for_function("() => window.forgeEditor.state.selected === 'test'", timeout=WAIT)
    rename = page.locator("#inspector [data-path=id]")
    rename.fill("check")
    held = []  # the rename's answer is held until the person has left the field for the YAML pane
    page.route("**/patch", lambda route: held.append(route))
    rename.press("Enter")
    page.wait_for_function("() => window.patchesSent.length === 1", timeout=WAIT)
    page.click(".cm-content")  # leaving the field must not send the rename again
    held[0].continue_()
    page.unroute("**/patch")
    page.wait_for_function("() => window.forgeEditor.text().includes('- check')", timeout=WAIT)
    valid(page)
    assert page.evaluate("() => window.patchesSent") == [{"op": "step.rename", "id": "test", "to": "check"}]
    expect(page.locator("#editor-said")).not_to_contain_text("Not changed")

    go_to_line(page, line_of(COMMENTED, "  - id: test") + 1)
    page.wait_for_function("() => window.forgeEditor.state.selected === 'check'", timeout=WAIT)
    page.click("#palette button[data-kind='agent:mock']")  # added after the chosen step, and chosen
    page.wait_for_function("() => window.forgeEditor.state.selected === 'mock_1'", timeout=WAIT)
    # The YAML pane shows the new step's block chosen, as the patch's answer places it.
    assert page.evaluate("() => window.forgeEditor.selection()").lstrip().startswith("- id: mock_1")
    page.click("#graph [data-editor-graph=delete]")
    page.wait_for_function("() => !window.forgeEditor.text().includes('mock_1')", timeout=WAIT)

    go_to_line(page, line_of(COMMENTED, "  - id: build") + 1)
    page.wait_for_function("() => window.forgeEditor.state.selected === 'build'", timeout=WAIT)
    page.click("#graph [data-editor-graph=copy]")
    expect(page.locator("#editor-said")).to_contain_text("Copied 1 step", timeout=WAIT)
    page.click("#graph [data-editor-graph=paste]")
    page.wait_for_function("() => window.forgeEditor.text().includes('- id: build_2')", timeout=WAIT)
    page.wait_for_function("() => window.forgeEditor.state.selected === 'build_2'", timeout=WAIT)
    chosen = page.evaluate("() => window.forgeEditor.selection()")  # the copy's block, not the original's
    assert "- id: build_2" in chosen and "- id: build\n" not in chosen, chosen
    expect(page.locator("#inspector")).to_contain_text("Step build_2")
    valid(page)
    save(page, "Renamed test, copied build")
    expect(page.locator("#editor-said")).to_have_text(re.compile(r"Saved v1 of release_train\."), timeout=WAIT)
    console.shot(page, "editor-commented-saved")

    saved = source(console.deployment, "release_train", 1)
    assert saved == text(page)
    build = "  # build first\n  - id: build\n    agent: mock\n    command: make build   # the build\n\n"
    # The rename changed the id and the one reference; the copy came with its own comment; the step added and
    # deleted left nothing; every other byte is as the person wrote it.
    assert saved == COMMENTED.replace("  - id: test\n", "  - id: check\n").replace(
        "      - test\n", "      - check\n").replace(build, build + build.replace("id: build", "id: build_2"))
    near = "(at, want) => Math.abs(at.x - want.x) < 1 && Math.abs(at.y - want.y) < 1"

    page.reload()  # the editor opened again draws ship where it was dragged
    page.wait_for_selector(READY, timeout=WAIT)
    page.wait_for_function(f"(want) => {cy}.getElementById('ship').length === 1 && ({near})({cy}.getElementById('ship').position(), want)",
                           arg=ship, timeout=WAIT)
    page.goto(f"{console.url}/workflows/release_train/")  # and so does the workflow page
    page.wait_for_function(f"(want) => window.forgeGraph?.view?.cy.getElementById('ship').length === 1"
                           f" && ({near})(window.forgeGraph.view.cy.getElementById('ship').position(), want)", arg=ship, timeout=WAIT)
    console.shot(page, "workflow-page-placed-ship")



LONG_LINE = "echo " + "the legal team reads every clause of the contract, " * 8
LEGAL = "name: legal_flow\nsteps:\n" + "".join(
    f"  - id: draft_{n}\n    agent: mock\n    command: |\n" + "".join(f"      echo part {k} of draft {n}\n" for k in range(8))
    for n in range(1, 7)) + f"""\
  - id: legal
    name: Legal review
    agent: mock
    depends_on: [draft_6]
    command: {LONG_LINE}
"""


def test_a_node_chosen_on_the_graph_shows_its_yaml_block_from_the_start_of_its_lines(console, browser):
    page = console.login(browser, "olive")
    page.goto(f"{console.url}/workflows/new-workflow/")
    page.fill("#yaml", LEGAL)
    page.click("text=Open in the editor")
    page.wait_for_selector(READY, timeout=WAIT)
    valid(page)
    cy = "window.forgeEditor.graph.cy"
    page.wait_for_function(f"() => {cy}.getElementById('legal').length === 1"
                           " && document.getElementById('graph').dataset.layout === 'done'", timeout=WAIT)
    scroller = "document.querySelector('#yaml .cm-scroller')"
    pane = page.locator("#yaml .cm-scroller").bounding_box()
    gutter = page.locator("#yaml .cm-gutters").bounding_box()

    def click_node(step: str) -> None:
        page.evaluate(f"(id) => {cy}.center({cy}.getElementById(id))", step)
        node = page.evaluate(f"(id) => {cy}.getElementById(id).renderedPosition()", step)
        canvas = page.locator("#graph .editor-graph-canvas").bounding_box()
        page.mouse.click(canvas["x"] + node["x"], canvas["y"] + node["y"])
        page.wait_for_function("(id) => window.forgeEditor.state.selected === id", arg=step, timeout=WAIT)
        assert page.evaluate("() => window.forgeEditor.selection()").startswith(f"  - id: {step}\n")

    def shown_from_its_start(first_line: str, inner_line: str) -> None:
        """The chosen block's first line is in the pane, and no line's start is scrolled out of view."""
        page.wait_for_function(f"() => {scroller}.scrollLeft === 0", timeout=WAIT)
        first = page.locator("#yaml .cm-line", has_text=first_line).bounding_box()
        assert pane["y"] <= first["y"] and first["y"] + first["height"] <= pane["y"] + pane["height"], (first, pane)
        inner = page.locator("#yaml .cm-line", has_text=inner_line).element_handle()
        start = page.evaluate("(line) => { const text = document.createTreeWalker(line, NodeFilter.SHOW_TEXT).nextNode();"
                              " const r = document.createRange(); r.setStart(text, 0); r.setEnd(text, 1);"
                              " return r.getBoundingClientRect().left; }", inner)  # its first character
        assert start >= gutter["x"] + gutter["width"], f"the start of {inner_line!r} is under the gutter"

    # legal's block is below the pane's view and its last line is far wider than the pane: chosen on the graph, it
    # is scrolled into view, from the start of its lines (never sideways to the end of the long one).
    assert page.evaluate(f"() => {scroller}.scrollTop") == 0
    click_node("legal")
    shown_from_its_start("- id: legal", "name: Legal review")
    console.shot(page, "editor-chosen-block-from-its-start")

    # The pane scrolled sideways by hand to read the long line; another step chosen is shown from its start too.
    page.wait_for_function(f"() => {{ {scroller}.scrollLeft = 400; return {scroller}.scrollLeft === 400; }}",
                           timeout=WAIT)
    click_node("draft_6")
    shown_from_its_start("- id: draft_6", "echo part 0 of draft 6")
