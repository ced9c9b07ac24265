"""A person picks dates in Since and Until on the runs list and the audit page, in Chromium (issue 17, point 1:
only valid dates crashed, so a person choosing one is the test): the pages answer with the rows of those days."""

from __future__ import annotations

from datetime import date, timedelta

import pytest

from tests.browser.test_console_in_a_browser import NEEDS_A_YES, save, start_runs

pytestmark = [pytest.mark.slow, pytest.mark.parametrize("console", ["sqlite"], indirect=True)]


def pick(page, since: date, until: date) -> None:
    page.fill("input[name=since]", since.isoformat())  # what the date picker puts in the field
    page.fill("input[name=until]", until.isoformat())
    with page.expect_navigation() as answered:
        page.click("form.filters button[type=submit]")
    assert answered.value.status == 200, page.inner_text("body")[:300]


def test_dates_picked_on_the_runs_list_and_the_audit_page_show_those_days(console, browser):
    save(console, NEEDS_A_YES)
    run_id, = start_runs(console, "Acme")
    today = date.today()  # the deployment's clock is this machine's, in UTC like the filters
    adam = console.login(browser, "adam")

    adam.goto(console.url + "/runs/")
    pick(adam, today - timedelta(days=1), today + timedelta(days=1))
    assert adam.locator(f"a[href='/runs/{run_id}/']").count() >= 1
    pick(adam, today - timedelta(days=30), today - timedelta(days=2))
    assert adam.locator(f"a[href='/runs/{run_id}/']").count() == 0
    console.shot(adam, "runs-filtered-by-date")

    adam.goto(console.url + "/audit/")
    pick(adam, today - timedelta(days=1), today + timedelta(days=1))
    assert "forge.run.started" in adam.inner_text("#audit")
    pick(adam, today + timedelta(days=2), today + timedelta(days=3))
    assert adam.inner_text("#audit tbody") == "No audit event matches."
