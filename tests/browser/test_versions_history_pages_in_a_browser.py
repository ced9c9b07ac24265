"""A long history in a browser: the versions page shows 50 versions, newest first; a person goes Older and Newer,
types two version numbers (one listed on another page) and reads their diff, step by step and as text."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

pytestmark = pytest.mark.slow

WAIT = 30_000  # ms

HISTORY = """
from django.contrib.auth.models import User
from forge.workflows.models import Workflow, WorkflowVersion, content_hash
workflow = Workflow.objects.create(name="long_history")
texts = [f"name: long_history\\nsteps:\\n  - {{id: greet, agent: mock, command: say {n}}}\\n" for n in range(1, 121)]
olive = User.objects.get(username="olive")
WorkflowVersion.objects.bulk_create(WorkflowVersion(workflow=workflow, number=n, source=text,
    content_hash=content_hash(text), created_by=olive, message=f"save {n}") for n, text in enumerate(texts, 1))
result = True
"""


def numbers(page) -> list[int]:
    return [int(n) for n in page.locator("#versions tbody tr").evaluate_all("rows => rows.map(r => r.dataset.version)")]


def test_a_long_history_pages_and_any_two_versions_are_compared_by_number(console, browser):
    console.deployment.query(HISTORY)
    page = console.login(browser, "olive")
    page.goto(f"{console.url}/workflows/long_history/versions/")
    assert numbers(page) == list(range(120, 70, -1))
    expect(page.locator("#version-diff")).to_have_attribute("data-ready", "true", timeout=WAIT)  # v119 -> v120
    page.click("#older")
    assert numbers(page) == list(range(70, 20, -1))
    page.click("#older")
    assert numbers(page) == list(range(20, 0, -1)) and page.locator("#older").count() == 0
    page.click("#newer")
    assert numbers(page) == list(range(70, 20, -1))

    page.fill("#a", "3")  # on the last page, not this one
    page.fill("#b", "118")
    page.click("#compare button[type=submit]")
    expect(page.locator("#version-diff")).to_have_attribute("data-ready", "true", timeout=WAIT)
    expect(page.locator("#diff-text")).to_contain_text("command: say 3}")
    expect(page.locator("#diff-text")).to_contain_text("command: say 118}")
    assert numbers(page) == list(range(70, 20, -1))  # still the page the person was on
    console.shot(page, "versions-long-history")
