"""The list pages as people use them, in Chromium (issue 17, points 19, 26, 27): a decision in the inbox swaps
its card without a reload, the runs list's tabs and rows and the badge follow a new run live, the row menu
runs a run again, and the dashboard draws the days, the success rate, the failing workflows and the kill
switch. Screenshots at 1440 px wide."""

from __future__ import annotations

import pytest

from tests.browser.test_console_in_a_browser import FAILS_LATE, NEEDS_A_YES, save, start_runs

pytestmark = [pytest.mark.slow, pytest.mark.parametrize("console", ["sqlite"], indirect=True)]
LIVE = "[data-live-indicator][data-state=live]"
WIDE = {"width": 1440, "height": 1000}


def wide(console, browser, name: str):
    return console.login_in(browser.new_context(viewport=WIDE), name)


def phone(console, page, name: str) -> None:
    """The page at a phone's width: nothing wider than the screen; then back to wide."""
    page.set_viewport_size({"width": 390, "height": 844})
    assert page.evaluate("() => document.documentElement.scrollWidth") <= 390
    console.shot(page, name)
    page.set_viewport_size(WIDE)


def count(page, tab: str) -> str:
    return page.inner_text(f"[data-tab={tab}] .count")


def test_a_decision_in_the_inbox_swaps_its_card_without_a_reload(console, browser):
    save(console, NEEDS_A_YES)
    first, second = start_runs(console, "Acme", "Globex")
    april = wide(console, browser, "april")
    april.goto(console.url + "/approvals/")
    april.wait_for_selector(LIVE)
    april.evaluate("() => { window.sameDocument = true; }")  # gone if the page were loaded again
    card = april.locator(f"[data-approval]:has(a[href='/runs/{first}/'])")
    card.locator("input[name=comment]").fill("vendor checked")
    other = april.locator(f"[data-approval]:has(a[href='/runs/{second}/'])")
    other.locator("input[name=comment]").fill("still thinking")
    card.locator("button[value=approve]").click()
    april.wait_for_selector(f"[data-approval]:has(a[href='/runs/{first}/'])", state="detached")
    april.wait_for_function(f"() => document.getElementById('said').textContent.includes('run {first}')")
    assert april.evaluate("() => window.sameDocument") is True
    assert other.locator("input[name=comment]").input_value() == "still thinking"
    april.wait_for_function("() => document.getElementById('approvals-badge').textContent === '1'")
    console.shot(april, "inbox-after-a-decision")

    # A refusal leaves the card as typed and says why (an answer past the limit)
    other.locator("input[name=comment]").evaluate("(el) => { el.removeAttribute('maxlength'); }")
    other.locator("input[name=comment]").fill("x" * 2001)
    other.locator("button[value=approve]").click()
    april.wait_for_function("() => document.getElementById('said').textContent.includes('at most 2000')")
    assert other.locator("input[name=comment]").input_value() == "x" * 2001
    assert april.evaluate("() => window.sameDocument") is True


def test_the_runs_list_tabs_rows_and_badge_follow_a_new_run_live(console, browser):
    save(console, NEEDS_A_YES)
    adam = wide(console, browser, "adam")
    adam.goto(console.url + "/runs/")
    adam.wait_for_selector(LIVE)
    adam.evaluate("() => { window.sameDocument = true; }")
    assert (count(adam, "all"), count(adam, "waiting")) == ("0", "0")
    [run] = start_runs(console, "Acme")
    adam.wait_for_selector(f"tr[data-run='{run}'] [data-field=waiting]")
    adam.wait_for_function("() => document.querySelector('[data-tab=waiting] .count').textContent === '1'")
    adam.wait_for_function("() => document.getElementById('approvals-badge').textContent === '1'")
    assert count(adam, "all") == "1" and adam.evaluate("() => window.sameDocument") is True
    adam.click(f"tr[data-run='{run}'] .row-menu summary")
    console.shot(adam, "runs-list-live-with-menu")
    phone(console, adam, "runs-list-390")
    adam.click(f"tr[data-run='{run}'] .row-menu a:text('Run again')")
    adam.wait_for_selector("#run-again-note")
    assert adam.input_value("#arg-vendor") == "Acme"


def test_the_dashboard_over_time_and_the_kill_switch(console, browser):
    save(console, NEEDS_A_YES)
    save(console, FAILS_LATE)
    start_runs(console, "Acme")
    console.deployment.query(
        "from datetime import timedelta\nfrom django.contrib.auth.models import User\nfrom django.utils import timezone\n"
        "from forge.runs import services\nfrom forge.runs.models import Run\nfrom forge.governance.models import "
        "BudgetEnvelope\nfrom forge.workflows.models import Workflow\n"
        "olive = User.objects.get(username='olive')\n"
        "for days, name in ((1, 'fails_late'), (3, 'needs_a_yes'), (3, 'fails_late'), (6, 'needs_a_yes')):\n"
        "    run = services.run_start(user=olive, version=Workflow.objects.get(name=name).latest_version(), "
        "args={'vendor': 'x'} if name == 'needs_a_yes' else {})\n"
        "    at = timezone.now() - timedelta(days=days)\n"
        "    Run.objects.filter(pk=run.pk).update(created_at=at, started_at=at, finished_at=at + timedelta(minutes=2), "
        "status='failed' if name == 'fails_late' else 'completed')\n"
        "BudgetEnvelope.objects.create(name='tiny', scope='org', limit=0.006)\n"
        "result = True")
    adam = wide(console, browser, "adam")
    adam.goto(console.url + "/")
    adam.wait_for_selector(LIVE)
    assert adam.inner_text("[data-field=success-rate]") == "50%"
    assert "fails_late" in adam.inner_text("#board-failures")
    assert adam.locator("svg.days rect").count() == 5
    adam.fill("#kill-switch-reason", "incident 42")
    adam.click("#kill-switch-form button[type=submit]")
    adam.wait_for_selector("[data-state=engaged]")
    assert "Schedules stopped by the kill switch (manual runs still start)." in adam.inner_text("#kill-switch")
    console.shot(adam, "dashboard")
    phone(console, adam, "dashboard-390")

    olive = wide(console, browser, "olive")
    olive.goto(console.url + "/")
    assert "incident 42" in olive.inner_text("#kill-switch") and olive.locator("#kill-switch-form").count() == 0
    olive.goto(console.url + "/workflows/needs_a_yes/")
    assert "A run would be refused now" not in olive.inner_text("#run-h + *")  # nothing spent yet: room left
