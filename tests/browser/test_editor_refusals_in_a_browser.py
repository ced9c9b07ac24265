"""A gesture the server refuses, on the editor page itself: the inspector field that asked says why beside it, and
the text does not change (the inspector's own tests answer for a stand-in server; this one is daphne's word)."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from tests.browser.test_editor_in_a_browser import READY, WAIT, text

pytestmark = pytest.mark.slow


def test_a_cycle_asked_for_in_the_inspector_is_refused_beside_its_field(console, browser):
    page = console.login(browser, "olive")
    page.goto(f"{console.url}/workflows/new-workflow/")
    page.click("#new-workflow button[type=submit]")  # blank
    page.wait_for_selector(READY, timeout=WAIT)
    mock = "#palette button[data-kind='agent:mock']"
    page.click(mock)
    page.wait_for_function("() => window.forgeEditor.state.selected === 'mock_1'", timeout=WAIT)
    page.click(mock)  # after the selected step
    page.wait_for_function("() => window.forgeEditor.state.selected === 'mock_2'", timeout=WAIT)
    page.fill("#inspector [data-path=depends_on]", "mock_1")
    page.press("#inspector [data-path=depends_on]", "Enter")
    page.wait_for_function("() => window.forgeEditor.state.outline.edges.some((e) => e.from === 'mock_1'"
                           " && e.to === 'mock_2' && e.explicit)", timeout=WAIT)

    page.wait_for_function("() => document.getElementById('graph').dataset.layout === 'done'"
                           " && window.forgeEditor.graph.cy.getElementById('mock_1').length === 1", timeout=WAIT)
    at = page.evaluate("() => window.forgeEditor.graph.cy.getElementById('mock_1').renderedPosition()")  # laid out
    box = page.locator(".editor-graph-canvas").bounding_box()
    page.mouse.click(box["x"] + at["x"], box["y"] + at["y"])  # mock_1's node
    page.wait_for_function("() => window.forgeEditor.state.selected === 'mock_1'", timeout=WAIT)
    before = text(page)
    field = page.locator("#inspector [data-path=depends_on]")
    field.fill("mock_2")
    field.press("Enter")
    message = page.locator("#" + field.get_attribute("aria-describedby"))
    expect(message).to_contain_text("dependency on \"mock_2\" not added", timeout=WAIT)
    expect(message).to_contain_text("cycle", timeout=WAIT)
    assert text(page) == before  # refused: nothing changed
    edges = page.evaluate("() => window.forgeEditor.state.outline.edges.map((e) => e.from + '>' + e.to)")
    assert edges == ["mock_1>mock_2"]
