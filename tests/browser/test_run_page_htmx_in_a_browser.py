"""The run page's approval cards and its step panel's decision are htmx's, in Chromium against daphne and a real
cluster: a card is read again when the run's events say an approval changed, keeping the comment being typed
(and its focus); a decision from the step panel swaps the panel's card and says so without reloading the page;
and a step's cost reads with the precision it has in the steps table, live and on load."""

from __future__ import annotations

import pytest

from tests.browser.test_console_in_a_browser import save_and_start
from tests.browser.test_decisions_in_a_browser import open_run

pytestmark = pytest.mark.slow

PRICED_GATES = """
name: priced_gates
steps:
  - {id: left, approval: required, approval_message: "left?"}
  - {id: right, approval: required, approval_message: "right?"}
  - {id: priced, agent: mock, command: go, depends_on: [left, right], mock: {cost: 0.006}}
"""
CARDS = "document.querySelectorAll('#decisions [data-approval-key]')"
COST = "document.querySelector('#steps tr[data-step=priced] [data-field=cost]').textContent"


def card(step: str) -> str:
    return f"#decisions [data-approval-key]:has-text('{step}?')"  # its message


@pytest.mark.parametrize("console", ["sqlite"], indirect=True)
def test_cards_follow_the_run_keeping_what_is_typed_and_the_panel_decides_without_a_reload(console, browser):
    run_id = save_and_start(console, PRICED_GATES, "priced_gates")
    april = open_run(console, browser, "april", run_id)
    april.wait_for_function(f"() => {CARDS}.length === 2")
    assert april.evaluate(f"() => {COST}") == "0.00"

    # April is typing on the right card when Adam decides the left one elsewhere: the cards are read again,
    # the left one goes, and what she typed stays, where she was typing.
    april.click(f"{card('right')} input[name=comment]")
    april.keyboard.type("still thinking")
    with april.expect_response(lambda r: r.url.endswith(f"/runs/{run_id}/decisions/") and r.ok):
        console.deployment.query(
            "from django.contrib.auth.models import User\nfrom forge.runs import services\n"
            "from forge.runs.models import Approval\n"
            f"a = Approval.objects.get(run_id={run_id}, step='left')\n"
            "result = services.approval_decide(user=User.objects.get(username='adam'), approval=a, "
            "decision='approve').pk")
    april.wait_for_function(f"() => {CARDS}.length === 1")
    assert april.locator(f"{card('right')} input[name=comment]").input_value() == "still thinking"
    assert april.evaluate("() => document.activeElement.name") == "comment"
    april.keyboard.type(", done")
    assert april.locator(f"{card('right')} input[name=comment]").input_value() == "still thinking, done"
    console.shot(april, "card-kept-while-typing")

    # She decides the right one from its step panel: the panel's card goes, the sentence is said at the top,
    # the page's card goes by its read, and the page is the one she had (never loaded again).
    april.click("#steps [data-open-step=right]")
    panel_form = ".step-panel[data-step=right] .panel-decision form"
    april.wait_for_selector(panel_form)
    april.fill(f"{panel_form} input[name=comment]", "ship it")
    april.click(f"{panel_form} button[value=approve]")
    april.wait_for_function("() => document.querySelector('#said').textContent.includes('right in run')")
    april.wait_for_function("() => !document.querySelector('.step-panel[data-step=right] .panel-decision')")
    april.wait_for_function(f"() => {CARDS}.length === 0")
    assert april.evaluate("() => window.notReloaded === true")
    console.shot(april, "panel-decision-swapped")

    # The priced step's cost arrives live with the precision it has, and reads the same on load.
    april.wait_for_function("() => window.forgeRun.runStatus === 'completed'")
    april.wait_for_function(f"() => {COST} === '0.006'")
    assert april.evaluate("() => window.notReloaded === true")
    console.shot(april, "cost-live")
    april.reload()
    assert april.evaluate(f"() => {COST}") == "0.006"
