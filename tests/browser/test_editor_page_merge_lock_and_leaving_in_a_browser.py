"""The editor page in Chromium: while the merge view is open the draft under it cannot change (the YAML pane is
read-only, gestures and undo are refused with a word) and Back to my draft gives it back; a big text typed just
before the page closes is sent at once and the page asks before it goes, a small one goes in a keepalive
request without asking; the Save dialog shows the server's diff."""

from __future__ import annotations

import re
import time

import pytest
from playwright.sync_api import expect

from tests.browser.test_editor_in_a_browser import (READY, WAIT, go_to_line, line_of, open_editor, rewrite_line, save,
                                                    saved_under_another,
                                                    source, text, valid)

pytestmark = pytest.mark.slow
LOCKED = "Finish or close the merge first"


def draft_text(console, person: str, workflow: str | None) -> str:
    which = f"workflow__name={workflow!r}" if workflow else "workflow__isnull=True"
    return console.deployment.query("from forge.workflows.models import Draft\n"
                                    f"d = Draft.objects.filter(user__username={person!r}, {which}).order_by('-pk')"
                                    ".first()\nresult = d.text")


def wait_for_draft(console, person: str, workflow: str | None, wanted: str) -> None:
    deadline = time.monotonic() + WAIT / 1000
    while draft_text(console, person, workflow) != wanted:
        assert time.monotonic() < deadline, "the draft never held the typed text"


def test_the_merge_view_locks_the_draft_and_back_to_my_draft_unlocks_it(console, browser):
    olive, adam, original, line = saved_under_another(console, browser)
    go_to_line(adam, line_of(original, "  - id:"))  # the first step: the inspector shows it
    expect(adam.locator("#inspector [data-path=id]")).to_be_visible(timeout=WAIT)
    valid(adam)
    save(adam, "adam's description")
    expect(adam.locator("#merge")).to_be_visible(timeout=WAIT)
    mine = text(adam)
    said = adam.locator("#editor-said")
    adam.locator(".cm-content").click()
    adam.keyboard.type("typed under the merge")
    assert text(adam) == mine
    adam.locator("#undo").click()
    adam.keyboard.press("Control+z")
    assert text(adam) == mine
    expect(adam.locator("#yaml-locked")).to_be_visible()
    expect(said).to_contain_text(LOCKED)
    expect(adam.locator(".cm-content")).to_have_attribute("contenteditable", "false")
    said.evaluate("(el) => el.replaceChildren()")
    adam.locator("#palette button").first.click()
    expect(said).to_contain_text(LOCKED)
    said.evaluate("(el) => el.replaceChildren()")
    step_id = adam.locator("#inspector [data-path=id]")
    was = step_id.input_value()
    step_id.fill("renamed_under_the_merge")
    step_id.press("Enter")
    expect(said).to_contain_text(LOCKED)
    expect(step_id).to_have_value(was)
    said.evaluate("(el) => el.replaceChildren()")
    adam.locator("#save").click()
    expect(said).to_contain_text(LOCKED)
    expect(adam.locator("#save-dialog")).to_be_hidden()
    adam.wait_for_timeout(300)  # nothing to wait for: a refused change sends nothing; a wrong one would show
    assert text(adam) == mine
    assert draft_text(console, "adam", "code_review") == mine
    console.shot(adam, "editor-merge-locked")

    adam.locator("#merge button", has_text="Back to my draft").click()
    expect(adam.locator("#merge")).to_be_hidden()
    expect(adam.locator("#yaml-locked")).to_be_hidden()
    expect(adam.locator(".cm-content")).to_have_attribute("contenteditable", "true")
    go_to_line(adam, 1)
    adam.keyboard.type("# back to my draft\n")
    expect(adam.locator("#validity")).to_have_text(re.compile(r"^Valid"), timeout=WAIT)
    assert text(adam) == "# back to my draft\n" + mine
    wait_for_draft(console, "adam", "code_review", "# back to my draft\n" + mine)


def big_workflow(console) -> str:
    padding = "".join(f"# a note kept with the workflow, line {n:05}\n" for n in range(2_000))  # ~90 KB
    return source(console.deployment, "shell_pipeline").replace("shell_pipeline", "big_pipeline") + padding


def test_a_big_text_typed_before_leaving_is_sent_at_once_and_the_page_asks(console, browser):
    page = console.login(browser, "olive")
    page.goto(f"{console.url}/workflows/new-workflow/")
    big = big_workflow(console)
    assert len(big.encode()) > 64 * 1024
    page.check("#source-paste")
    page.fill("#yaml", big)
    page.click("#new-workflow button[type=submit]")
    page.wait_for_selector(READY, timeout=WAIT)
    assert text(page) == big
    dialogs = []
    page.on("dialog", lambda dialog: dialogs.append(dialog))  # held open until the test answers it

    # The page's text requests wait in the page until the test lets them go, so its typing is still unsent when
    # it closes however slowly this machine types (an answer that came first would leave nothing to ask about).
    page.evaluate("""() => { const send = window.fetch; window.heldTexts = [];
      window.fetch = (url, options) => (String(url).endsWith('/text') ? new Promise((resolve, reject) =>
        window.heldTexts.push({ body: options.body, go: () => send(url, options).then(resolve, reject) }))
        : send(url, options)); }""")
    go_to_line(page, 1)
    page.keyboard.type("# ab")
    page.close(run_before_unload=True)
    deadline = time.monotonic() + WAIT / 1000
    while not dialogs:
        assert time.monotonic() < deadline, "the page left without asking"
        page.wait_for_timeout(50)
    assert dialogs[0].type == "beforeunload"
    dialogs[0].dismiss()  # stay
    assert not page.is_closed()
    sent = page.evaluate("() => JSON.parse(window.heldTexts.at(-1).body).text")
    assert sent == "# ab" + big  # the whole text, sent as the page asked
    page.evaluate("() => window.heldTexts.forEach((held) => held.go())")
    wait_for_draft(console, "olive", None, "# ab" + big)
    assert text(page) == "# ab" + big
    page.close()


def test_a_small_text_typed_before_leaving_goes_without_asking(console, browser):
    page = console.login(browser, "olive")
    open_editor(console, page, "shell_pipeline")
    original = text(page)
    dialogs = []
    page.on("dialog", lambda dialog: dialogs.append(dialog))
    go_to_line(page, 1)
    page.keyboard.type("# ab")
    page.goto(f"{console.url}/workflows/")  # would wait on a question nobody answers
    wait_for_draft(console, "olive", "shell_pipeline", "# ab" + original)
    assert dialogs == []


def test_the_save_dialog_shows_the_servers_diff_to_the_base_version(console, browser):
    page = console.login(browser, "olive")
    open_editor(console, page, "shell_pipeline")
    original = text(page)
    line = line_of(original, "description:")
    rewrite_line(page, line, "description: checked by the server's diff")
    valid(page)
    expect(page.locator("#save")).to_be_enabled(timeout=WAIT)
    with page.expect_response(re.compile(r"/editor/drafts/\d+/diff$")) as answer:
        page.click("#save")
    assert answer.value.status == 200
    diff = page.locator("#save-diff")
    expect(diff.locator(".diff-del")).to_have_text(["-" + original.splitlines()[line - 1] + "\n"], timeout=WAIT)
    expect(diff.locator(".diff-add")).to_have_text(["+description: checked by the server's diff\n"])
    expect(diff.locator(".diff-hunk")).to_have_count(1)
    expect(page.locator("#save-what")).to_have_text("2 lines changed since v1, the version your draft began on.")
    console.shot(page, "editor-save-server-diff")
