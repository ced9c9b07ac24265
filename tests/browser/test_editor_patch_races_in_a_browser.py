"""A gesture's patch meets the person's typing (issue 20): the answer's changes are ranges of the text it was sent
with, so typed while it was on its way, the patch is dropped with a word and the typing kept (and sent to the
draft); an answer whose changes do not fit the text gives the server's text whole, and the next gesture still works."""

from __future__ import annotations

import json
import re
import time

import pytest
from playwright.sync_api import expect

from tests.browser.test_editor_in_a_browser import READY, WAIT, text

pytestmark = pytest.mark.slow

MOCK = "#palette button[data-kind='agent:mock']"


def ids(page) -> str:
    return page.evaluate("() => window.forgeEditor.state.outline.steps.map((s) => s.id).join()")


def draft_text(console) -> str:
    return console.deployment.query("from forge.workflows.models import Draft\n"
                                    "result = Draft.objects.order_by('-updated_at').first().text")


@pytest.mark.parametrize("console", ["sqlite"], indirect=True)
def test_typing_while_a_patch_is_on_its_way_keeps_the_typing_and_a_bad_answer_stops_nothing(console, browser):
    page = console.login(browser, "olive")
    page.goto(f"{console.url}/workflows/new-workflow/")
    page.click("#new-workflow button[type=submit]")  # blank
    page.wait_for_selector(READY, timeout=WAIT)
    page.click(MOCK)
    page.wait_for_function("() => window.forgeEditor.state.selected === 'mock_1'", timeout=WAIT)
    expect(page.locator("#validity")).to_have_text(re.compile(r"^Valid"), timeout=WAIT)

    def held_patch(held):
        """The palette's patch, held on its way (the route)."""
        page.route("**/patch", lambda route: held.append(route))
        with page.expect_request(lambda r: r.url.endswith("/patch")):
            page.click(MOCK)
        deadline = time.monotonic() + 30
        while not held and time.monotonic() < deadline:
            page.wait_for_function("() => true")  # lets the route handler run
        return held[0]  # (unrouted once answered: unroute would let it go on)

    def type_line(words):
        page.click(".cm-content")
        page.keyboard.press("Control+End")
        page.keyboard.press("Enter")
        page.keyboard.type(words)
        assert words in text(page)
        return text(page)

    # The typing reaches the server first: the patch, sent with the older text, is refused there as stale and made
    # again on the typed text, which keeps both.
    route = held_patch([])
    type_line("# typed first")
    deadline = time.monotonic() + 30
    while "# typed first" not in draft_text(console) and time.monotonic() < deadline:
        page.wait_for_function("() => true")
    route.continue_()
    page.unroute("**/patch")
    page.wait_for_function("() => window.forgeEditor.state.outline.steps.length === 2", timeout=WAIT)
    assert "# typed first" in text(page) and "id: mock_2" in text(page)
    expect(page.locator("#validity")).to_have_text(re.compile(r"^Valid"), timeout=WAIT)

    # The server makes the patch first and its answer arrives after the typing: its ranges are of the older text,
    # so nothing of it is applied, the person is told, and the typing is the draft.
    route = held_patch([])
    answer = route.fetch()
    typed = type_line("# typed meanwhile")
    route.fulfill(response=answer)
    page.unroute("**/patch")
    expect(page.locator("#editor-said")).to_contain_text("the text changed while", timeout=WAIT)
    assert text(page) == typed
    assert ids(page) == "mock_1,mock_2"
    expect(page.locator("#validity")).to_have_text(re.compile(r"^Valid"), timeout=WAIT)
    assert draft_text(console) == typed

    # An answer whose changes lie outside the text: the server's text is taken whole; the next gesture still works.
    def outside(route):
        response = route.fetch()
        body = response.json()
        body["changes"] = [{"from": 10**9, "to": 10**9, "insert": "x"}]
        route.fulfill(response=response, body=json.dumps(body))

    page.route("**/patch", outside)
    page.click(MOCK)
    page.wait_for_function("() => window.forgeEditor.state.outline.steps.length === 3", timeout=WAIT)
    assert "# typed meanwhile" in text(page) and "id: mock_3" in text(page)
    page.unroute("**/patch")
    page.click(MOCK)
    page.wait_for_function("() => window.forgeEditor.state.outline.steps.length === 4", timeout=WAIT)
    expect(page.locator("#validity")).to_have_text(re.compile(r"^Valid"), timeout=WAIT)
    assert draft_text(console) == text(page)
