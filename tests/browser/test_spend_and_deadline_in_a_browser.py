"""Issue 19's pages as a person reads them in Chromium: the run header counting down to the run's deadline and
then saying the deadline stopped it; a step panel saying which gateway took each attempt, the model that answered
and its tokens; the dashboard's gateways and month of spend; the Spend page and its month filter. Each on a
phone too, never wider than the screen."""

from __future__ import annotations

import re

import pytest

from tests.browser.test_console_in_a_browser import save_and_start

pytestmark = pytest.mark.slow

WAITS_WITH_A_DEADLINE = """
name: waits_with_a_deadline
timeout: 10m
steps:
  - {id: prepare, agent: mock, command: prepare, mock: {outputs: {ready: true}}}
  - {id: sign_off, approval: required, approval_message: ship it?, depends_on: [prepare]}
"""
SHORT_DEADLINE = WAITS_WITH_A_DEADLINE.replace("waits_with_a_deadline", "short_deadline").replace("10m", "3s")
LEFT = "() => document.querySelector('#run-deadline .deadline-left').textContent"
PHONE = {"width": 390, "height": 844}
WIDTH = "() => document.documentElement.scrollWidth"
# What a gateway-routed attempt leaves in the run's events (the contract of forge/runs/reads/attempt_calls.py).
CALLS = """
from forge.runs.models import Run, RunEvent
run = Run.objects.get(pk={run})
Run.objects.filter(pk=run.pk).update(pinned={{"agents": {{"mock": {{"provider": "http", "config": {{"model": "small-model"}},
    "gateways": ["gw-east", "gw-west"], "prices": [0.15, 0.6], "overridable": ["model"]}}}}}})
for kind, data in [
    ("governance", {{"attempt": 1, "gate": "routing", "outcome": "allow", "route": {{"gateways": ["gw-east", "gw-west"],
     "gateway": "gw-east", "reason": "the first healthy gateway covering summarize"}}}}),
    ("gateway", {{"attempt": 1, "iteration": 0, "gateway": "gw-east", "outcome": "unreachable",
     "reason": "connection refused; trying the next covering gateway"}}),
    ("gateway", {{"attempt": 1, "iteration": 0, "gateway": "gw-west", "outcome": "answered", "reason": ""}}),
    ("input", {{"type": "StepFinished", "step": "prepare", "attempt": 1, "ok": True, "model": "small-model-2025-06",
     "input_tokens": 12480, "output_tokens": 2210, "tokens": 14690, "cost": 0.003198}})]:
    RunEvent.objects.create(run=run, step="prepare", kind=kind, data=data)
result = True
"""
SPEND = """
from datetime import datetime, timedelta, UTC
from django.utils import timezone
from forge.governance.models import Gateway, TokenEvent
now = timezone.now()
Gateway.objects.create(name="gw-east", healthy=False, checked_at=now - timedelta(minutes=2), failures=3,
                       last_error="connection refused (127.0.0.1:9)", capabilities=["summarize"])
Gateway.objects.create(name="gw-west", healthy=True, checked_at=now - timedelta(seconds=20),
                       capabilities=["summarize", "code"])
n = 0
for at, workflow, agent, model, cost, i, o in [
        (now, "nightly_report", "writer", "gpt-4o-mini", 0.0123, 41000, 9000),
        (now, "nightly_report", "reviewer", "gpt-4o", 0.21, 18000, 2500),
        (now, "weekly_digest", "writer", "gpt-4o-mini", 0.004, 9000, 1200),
        (now - timedelta(days=35), "nightly_report", "writer", "gpt-4o-mini", 0.0101, 38000, 8000),
        (now - timedelta(days=70), "weekly_digest", "writer", "", 0.5, 0, 0)]:
    n += 1
    TokenEvent.objects.create(at=at, run_id=1, step="s", attempt=n, agent=agent, workflow=workflow, model=model,
                              cost=cost, tokens=i + o or 700, input_tokens=i, output_tokens=o)
result = True
"""


def fits_a_phone(page) -> None:
    page.set_viewport_size(PHONE)
    page.wait_for_function("() => document.documentElement.clientWidth <= 390")
    assert page.evaluate(WIDTH) <= PHONE["width"]


@pytest.mark.parametrize("console", ["sqlite"], indirect=True)
def test_the_header_counts_down_to_the_deadline_and_says_when_it_stopped_the_run(console, browser):
    run_id = save_and_start(console, WAITS_WITH_A_DEADLINE, "waits_with_a_deadline")
    olive = console.login_in(browser.new_context(viewport={"width": 1440, "height": 1000}), "olive")
    olive.goto(f"{console.url}/runs/{run_id}/")
    olive.wait_for_function("() => document.getElementById('live').dataset.state === 'live'")
    seen = olive.evaluate(LEFT)
    assert re.fullmatch(r"deadline in (10m 0s|9m [0-5]?[0-9]s)", seen), seen
    olive.wait_for_function(f"() => document.querySelector('#run-deadline .deadline-left').textContent !== {seen!r}")
    assert re.fullmatch(r"deadline in 9m [0-5]?[0-9]s", olive.evaluate(LEFT))
    assert "timeout 10m" in olive.inner_text("#run-deadline")
    console.shot(olive, "run-head-deadline")
    fits_a_phone(olive)
    console.shot(olive, "run-head-deadline-phone")

    # A run whose deadline passes while it is watched: the header says the deadline stopped it, live.
    short = save_and_start(console, SHORT_DEADLINE, "short_deadline")
    olive.set_viewport_size({"width": 1440, "height": 1000})
    olive.goto(f"{console.url}/runs/{short}/")
    olive.wait_for_function("() => window.forgeRun && window.forgeRun.runStatus === 'failed'", timeout=120_000)
    olive.wait_for_function("() => document.getElementById('run-deadline').textContent"
                            " === 'stopped at its deadline (timeout 3s)'")
    olive.reload()  # and the page read again says the same
    assert olive.inner_text("#run-deadline") == "stopped at its deadline (timeout 3s)"
    assert "run_timeout" in olive.inner_text("header.run-head")
    console.shot(olive, "run-head-stopped-at-deadline")


@pytest.mark.parametrize("console", ["sqlite"], indirect=True)
def test_the_step_panel_dashboard_and_spend_page_show_gateways_models_and_tokens(console, browser):
    run_id = save_and_start(console, WAITS_WITH_A_DEADLINE, "waits_with_a_deadline")
    console.deployment.query(CALLS.format(run=run_id))
    console.deployment.query(SPEND)
    olive = console.login_in(browser.new_context(viewport={"width": 1440, "height": 1000}), "olive")
    olive.goto(f"{console.url}/runs/{run_id}/")
    olive.wait_for_function("() => window.forgeRun && window.forgeRun.drawnAt !== null")
    olive.click("[data-open-step=prepare]")
    olive.wait_for_selector(".step-panel[data-step=prepare] ol.attempt-calls")
    attempt = olive.inner_text("li[data-attempt-call='1']")
    assert "taken by gateway gw-west" in attempt and "Routing: the first healthy gateway covering summarize" in attempt
    assert "gw-east could not be reached" in attempt and "gw-west answered" in attempt
    assert "model small-model-2025-06 · 12,480 input + 2,210 output = 14,690 tokens · cost 0.003198" in attempt
    assert "gw-east → gw-west" in olive.inner_text("dl.pinned")
    olive.locator("ol.attempt-calls").scroll_into_view_if_needed()
    console.shot(olive, "step-panel-gateways-and-tokens")

    olive.goto(console.url + "/")
    east = olive.inner_text("[data-gateway=gw-east]")
    assert "unhealthy" in east and "checked 2" in east and "connection refused (127.0.0.1:9)" in east
    assert "healthy" in olive.inner_text("[data-gateway=gw-west]")
    assert "80,700 tokens: 68,000 input, 12,700 output" in olive.inner_text("#board-spend")
    console.shot(olive, "dashboard-gateways-and-spend")
    fits_a_phone(olive)
    console.shot(olive, "dashboard-phone")

    olive.set_viewport_size({"width": 1440, "height": 1000})
    olive.click("a[href='/spend/']")
    olive.wait_for_url(re.compile(r"/spend/$"))
    assert "5 calls" in olive.inner_text("#spend-total")
    assert olive.inner_text("#spend-workflow tr[data-workflow=nightly_report] td:nth-child(2)") == "0.2324"
    console.shot(olive, "spend")
    month = olive.evaluate("() => new Date().toISOString().slice(0, 7)")
    olive.fill("#spend-from", month)
    olive.click("form.filters button[type=submit]")
    olive.wait_for_url(re.compile(r"from=" + month))
    assert "3 calls" in olive.inner_text("#spend-total")
    assert olive.locator("#spend-month tbody tr").count() == 1
    olive.goto(console.url + "/spend/?from=2026-13")
    assert "from must be a month written YYYY-MM" in olive.inner_text("#said")
    fits_a_phone(olive)
    olive.goto(console.url + "/spend/")
    assert olive.evaluate(WIDTH) <= PHONE["width"]
    console.shot(olive, "spend-phone")
