"""Hostile text from the YAML (step names, commands, keys a problem names, a version's message) reaches the
editor, its inspector, its problems list and the versions page's diff only as text: no element or script of it
runs (a page that tried would also meet the Content-Security-Policy, which fails the test at teardown)."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

pytestmark = pytest.mark.slow

WAIT = 30_000
MARKUP = '<img id=pwned src=x onerror="window.pwned=1">'
HOSTILE = f"""name: hostile
description: '{MARKUP}'
steps:
  - id: first
    name: '{MARKUP}'
    agent: mock
    command: echo '{MARKUP}'
"""


def test_markup_in_names_commands_problems_messages_and_diffs_stays_text(console, browser):
    console.deployment.query(
        "from django.contrib.auth.models import User\n"
        "from forge.workflows.services import workflow_version_save\n"
        "from forge.workflows.editing import draft_open\n"
        "olive = User.objects.get(username='olive')\n"
        f"workflow_version_save(user=olive, source={HOSTILE!r}, message='first')\n"
        f"v = workflow_version_save(user=olive, source={HOSTILE!r}.replace('echo', 'printf'), message={MARKUP!r})\n"
        "draft = draft_open(olive, v.workflow)\n"
        f"draft.text = {HOSTILE!r} + '    {MARKUP}: 1\\n'\n"
        "draft.save()\n"
        "result = draft.pk\n")
    page = console.login(browser, "olive")
    dialogs = []
    page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
    page.goto(f"{console.url}/workflows/hostile/edit/")
    page.wait_for_selector("#editor[data-ready=true]", timeout=WAIT)
    expect(page.get_by_text("pwned", exact=False).first).to_be_visible(timeout=WAIT)  # the text shows, as text
    page.click(".cm-content")  # the cursor into the step: the inspector shows it
    page.keyboard.press("Control+Home")
    for _ in range(5):
        page.keyboard.press("ArrowDown")
    expect(page.locator("#editor")).to_contain_text("first", timeout=WAIT)
    assert page.locator("#pwned").count() == 0 and page.evaluate("() => window.pwned") is None
    console.shot(page, "hostile-editor")
    page.goto(f"{console.url}/workflows/hostile/versions/?a=1&b=2")
    expect(page.locator("#diff-text")).to_contain_text("printf", timeout=WAIT)
    expect(page.locator("td.message").first).to_have_text(MARKUP)
    assert page.locator("#pwned").count() == 0 and page.evaluate("() => window.pwned") is None
    assert not dialogs
    console.shot(page, "hostile-versions")
