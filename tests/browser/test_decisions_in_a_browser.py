"""The run page's approval cards arrive live for everyone watching the run, in Chromium against daphne and a real
cluster: an operator (who may not decide) sees the card and why, an approver sees its form, and once decided the
card goes for both, none of them reloading."""

from __future__ import annotations

import pytest

from tests.browser.test_console_in_a_browser import save_and_start
from tests.forge.runs.test_decision_records import FLAKY

pytestmark = pytest.mark.slow

TWO_GATES = """
name: two_gates
steps:
  - {id: go, approval: required, approval_message: "start the release?"}
  - {id: sign_off, approval: required, approval_message: "ship it?", depends_on: [go]}
  - {id: ship, agent: mock, command: ship, depends_on: [sign_off]}
"""
LIVE = "() => document.getElementById('live').dataset.state === 'live'"


def cards(step: str, count: int) -> str:
    return f"() => document.querySelectorAll('#decisions [data-approval-key]').length === {count}" + (
        f" && document.querySelector('#decisions').textContent.includes('{step}:')" if count else "")


def open_run(console, browser, name: str, run_id: int):
    page = console.login(browser, name)
    page.goto(f"{console.url}/runs/{run_id}/")
    page.wait_for_function(LIVE)
    page.evaluate("() => { window.notReloaded = true; }")  # gone if the page loads again
    return page


@pytest.mark.parametrize("console", ["sqlite"], indirect=True)
def test_the_card_and_why_arrive_live_for_each_viewer_and_go_once_decided(console, browser):
    run_id = save_and_start(console, TWO_GATES, "two_gates")
    olive = open_run(console, browser, "olive", run_id)
    april = open_run(console, browser, "april", run_id)
    for page in (olive, april):
        page.wait_for_function(cards("go", 1))  # rendered with the page, or arrived: either way the first card

    # Adam lets the release start from elsewhere: the first card goes, the second arrives on both pages.
    console.deployment.query(
        "from django.contrib.auth.models import User\nfrom forge.runs import services\n"
        "from forge.runs.models import Approval\n"
        f"a = Approval.objects.get(run_id={run_id}, step='go')\n"
        "result = services.approval_decide(user=User.objects.get(username='adam'), approval=a, "
        "decision='approve').pk")
    for page in (olive, april):
        page.wait_for_function(cards("sign_off", 1))
        assert page.evaluate("() => window.notReloaded === true")
    card = olive.locator("#decisions [data-approval-key]")
    assert "ship it?" in card.inner_text()
    assert "You cannot decide this: you are not an approver." in card.inner_text()
    assert card.locator("button").count() == 0
    console.shot(olive, "operator-sees-why")
    form = april.locator("#decisions [data-approval-key] form")
    assert [b.inner_text() for b in form.locator("button").all()] == ["Approve", "Reject"]
    console.shot(april, "approver-sees-form")

    april.fill("#decisions [data-approval-key] input[name=comment]", "all good")
    april.click("#decisions [data-approval-key] button[value=approve]")
    for page in (olive, april):
        page.wait_for_function(cards("", 0))
        page.wait_for_function("() => window.forgeRun.runStatus === 'completed'")
    assert olive.evaluate("() => window.notReloaded === true")  # olive's card went by its own read of the cards
    # Back from a lost socket, a snapshot (sent instead of the approval events missed) has the cards read again.
    with olive.expect_response(lambda r: r.url.endswith(f"/runs/{run_id}/decisions/") and r.ok):
        olive.evaluate("() => document.dispatchEvent(new CustomEvent('forge:snapshot', "
                       "{detail: {last_id: window.forgeRun.lastApplied}}))")


LOOK = ("(b) => { const s = getComputedStyle(b); return [s.backgroundColor, s.color, s.borderTopStyle]; }")


@pytest.mark.parametrize("console", ["sqlite"], indirect=True)
def test_retry_skip_and_abort_each_look_like_what_they_do_and_a_retry_reads_as_chosen(console, browser):
    run_id = save_and_start(console, FLAKY, "flaky_fetch")
    april = open_run(console, browser, "april", run_id)
    april.wait_for_function(cards("fetch", 1))
    looks = {value: april.eval_on_selector(f"#decisions button[value={value}]", LOOK)
             for value in ("retry", "skip", "abort")}
    assert len({tuple(look) for look in looks.values()}) == 3  # three different looks
    assert looks["abort"][0] == "rgb(179, 38, 30)"  # solid red: it ends the step and the run
    assert looks["skip"][2] == "solid" and looks["skip"][0] == "rgb(255, 255, 255)"  # quiet, outlined
    console.shot(april, "escalation-buttons")
    april.set_viewport_size({"width": 390, "height": 900})  # on a phone the card and its buttons fit
    assert april.eval_on_selector("#decisions [data-approval-key]", "(c) => c.getBoundingClientRect().right") <= 390
    assert april.eval_on_selector("#decisions button[value=abort]", "(b) => b.getBoundingClientRect().right") <= 390
    console.shot(april, "escalation-buttons-390")
    april.set_viewport_size({"width": 1400, "height": 1000})

    april.click("#decisions button[value=retry]")
    april.wait_for_function("() => window.forgeRun.runStatus === 'completed'")
    april.click("[data-open-step=fetch]")
    april.wait_for_selector(".step-panel[data-step=fetch] .decided")
    said = april.inner_text(".step-panel[data-step=fetch] .decided")
    assert said.startswith("Retry chosen by april at ") and "Approved" not in april.inner_text("#step-panel")
    console.shot(april, "retry-chosen")
