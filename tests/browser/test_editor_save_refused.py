"""A save the server refuses as invalid (422), in Chromium against daphne: olive's draft uses a step of the library
and is valid while she types; an Admin takes that step out of the library before she saves; Save is refused with
the server's problems, which she reads in the Save dialog (one click takes her to the line) and in the problems list,
and no version is made."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from tests.browser.test_console_in_a_browser import save as save_version
from tests.browser.test_editor_in_a_browser import READY, WAIT, go_to_line, open_editor, text, valid

pytestmark = [pytest.mark.slow, pytest.mark.parametrize("console", ["sqlite"], indirect=True)]
GREETER = """name: greeter
steps:
  - id: hello
    agent: mock
    command: say hello
"""
USES_THE_LIBRARY = "  - {id: greet_them, library_step: greet, depends_on: [hello]}\n"
LIBRARY = ("from django.contrib.auth.models import User\nfrom forge.governance.services import {what}\n"
           "from forge.workflows.models import StepLibraryEntry\nadam = User.objects.get(username='adam')\n")


def versions(console) -> list[int]:
    return console.deployment.query("from forge.workflows.models import WorkflowVersion\nresult = list("
                                    "WorkflowVersion.objects.filter(workflow__name='greeter').values_list('number', "
                                    "flat=True))")


def test_a_save_the_server_refuses_shows_its_problem_in_the_dialog_and_the_list(console, browser):
    console.deployment.query(LIBRARY.format(what="config_save") + "".join(
        f"config_save(user=adam, instance=StepLibraryEntry(name={name!r}, definition={{'agent': 'mock', "
        f"'command': {name!r}}}))\n" for name in ("greet", "wave")) + "result = True")  # wave stays: a library
    save_version(console, GREETER)
    page = console.login(browser, "olive")
    open_editor(console, page, "greeter")
    go_to_line(page, GREETER.count("\n") + 1)  # the empty line after the last newline
    page.keyboard.insert_text(USES_THE_LIBRARY)
    assert text(page) == GREETER + USES_THE_LIBRARY
    valid(page)  # the server knows the library step while she types
    expect(page.locator("#problems button.problem")).to_have_count(0)
    expect(page.locator("#save")).to_be_enabled(timeout=WAIT)

    console.deployment.query(LIBRARY.format(what="config_delete")
                             + "config_delete(user=adam, instance=StepLibraryEntry.objects.get(name='greet'))\n"
                             "result = True")

    page.click("#save")
    expect(page.locator("#save-dialog")).to_be_visible()
    expect(page.locator("#save-diff")).to_contain_text("library_step: greet", timeout=WAIT)
    page.fill("#save-message", "Greet them with the library's step")
    with page.expect_response(lambda r: r.url.endswith("/save")) as answered:
        page.click("#save-confirm")
    assert answered.value.status == 422
    said = page.locator("#save-error")
    expect(said).to_have_text(re.compile(r"^Not saved: the workflow has (1 problem|\d+ problems); fix them before saving\.$"),
                              timeout=WAIT)
    told = int(re.search(r"\d+", said.inner_text())[0])
    expect(page.locator("#save-dialog")).to_be_visible()  # open: she reads why, her message still there
    expect(page.locator("#save-message")).to_have_value("Greet them with the library's step")
    expect(page.locator("#save-confirm")).to_be_enabled()
    in_dialog = page.locator("#save-problems button.problem[data-code=unknown_reference]")
    expect(in_dialog).to_contain_text("library step 'greet' is not in the step library")  # what, not just how many
    expect(page.locator("#save-problems button.problem")).to_have_count(min(told, 5))
    page.screenshot(path=str(console.shots / "editor-save-refused-dialog.png"), caret="initial")

    in_dialog.click()  # takes her to the line, the dialog closed
    expect(page.locator("#save-dialog")).to_be_hidden()
    assert "library_step: greet" in page.evaluate("() => window.forgeEditor.selection()")
    expect(page.locator("#problems button.problem")).to_have_count(told)  # the server's, where problems are read
    problem = page.locator("#problems button.problem[data-code=unknown_reference]")
    expect(problem).to_have_count(1)
    expect(problem).to_contain_text("library step 'greet' is not in the step library")
    expect(page.locator("#validity")).to_have_text(re.compile("not valid"))
    expect(page.locator("#save")).to_be_disabled()
    page.screenshot(path=str(console.shots / "editor-save-refused-problems.png"), caret="initial", full_page=True)
    assert versions(console) == [1]  # nothing was saved
    assert text(page) == GREETER + USES_THE_LIBRARY  # her draft is as she left it

    page.reload()  # the draft kept her text; checked again, the server says the same
    page.wait_for_selector(READY, timeout=WAIT)
    assert text(page) == GREETER + USES_THE_LIBRARY
    expect(page.locator("#problems button.problem[data-code=unknown_reference]")).to_have_count(1, timeout=WAIT)
