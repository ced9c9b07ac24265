"""Every console page and the main Django admin pages in Chromium, as an Admin, under the Content-Security-Policy:
each one works (the graph drawn and laid out by the elkjs worker, the socket live, the step panel and Gantt
fetched, the admin's stylesheets and scripts at work, a form posted) and none meets a violation, which the
console fixture fails any browser test on."""

from __future__ import annotations

import re

import pytest

from tests.browser.test_console_in_a_browser import FAILS_LATE, LIVE, NEEDS_A_YES, save, start_runs

pytestmark = pytest.mark.slow

LAID_OUT = ("() => window.forgeRun.laidOutAt !== null && window.forgeRun.cy.nodes().length === 3"
            " && window.forgeRun.cy.nodes().every((n) => n.visible())")


def box(page, selector: str) -> dict:
    return page.eval_on_selector(selector, "(el) => { const r = el.getBoundingClientRect(); "
                                           "return { width: r.width, height: r.height }; }")


def style(page, selector: str, prop: str) -> str:
    return page.eval_on_selector(selector, "(el, prop) => getComputedStyle(el).getPropertyValue(prop)", prop)


@pytest.mark.parametrize("console", ["sqlite"], indirect=True)  # the policy does not depend on the backend
def test_an_admin_walks_every_console_page_and_the_admin_without_a_violation(console, browser):
    save(console, NEEDS_A_YES)
    save(console, FAILS_LATE)
    [waiting] = start_runs(console, "Acme")
    failed, agent, schedule = console.deployment.query(
        "from django.contrib.auth.models import User\nfrom forge.governance.models import Agent, BudgetEnvelope\n"
        "from forge.runs import services\nfrom forge.schedules.services import schedule_add\n"
        "from forge.workflows.models import Workflow\n"
        "olive = User.objects.get(username='olive')\n"
        "BudgetEnvelope.objects.create(name='org', limit=100)\n"
        "failed = services.run_start(user=olive, version=Workflow.objects.get(name='fails_late').latest_version())\n"
        "schedule = schedule_add(user=olive, workflow='needs_a_yes', cron='0 3 * * *', args={'vendor': 'Acme'})\n"
        "result = [failed.pk, Agent.objects.order_by('pk').first().pk, schedule.pk]")
    console.deployment.finished(failed)
    adam = console.login(browser, "adam")  # the login page, under the policy too
    assert adam.url == console.url + "/"

    adam.wait_for_selector("[data-live-indicator][data-state=live]")  # the dashboard's socket: connect-src 'self' admits ws:
    assert box(adam, ".budget svg.bar")["width"] > 100 and box(adam, ".budget svg.bar")["height"] > 5

    adam.goto(console.url + f"/runs/{waiting}/")  # the first page to draw this version: elkjs lays it out
    adam.wait_for_function(LIVE)
    adam.wait_for_function(LAID_OUT)
    assert adam.locator("#__________cytoscape_stylesheet").count() == 1  # console/graph.css: Cytoscape added none
    assert style(adam, "#graph", "position") == "relative"
    assert box(adam, "#graph canvas")["width"] > 100
    adam.click("[data-open-step=prepare]")
    adam.wait_for_selector(".step-panel[data-step=prepare]")
    adam.click("[data-view=gantt]")  # the Gantt's rows are positioned by script and drawn in SVG, under the policy
    piece = "#gantt g[data-step=prepare] rect.piece.status-completed"
    adam.wait_for_selector(piece)
    assert box(adam, piece)["width"] > 0
    assert style(adam, piece, "fill") == "rgb(31, 122, 63)"
    adam.click("[data-view=graph]")
    console.shot(adam, "csp-run-view")

    adam.goto(console.url + "/workflows/needs_a_yes/")
    adam.wait_for_function("() => window.forgeWorkflow && window.forgeWorkflow.drawnAt !== null")
    for page, shows in (("/workflows/", "#workflows tr[data-workflow=needs_a_yes]"),
                        ("/runs/", f"#runs-table tr[data-run='{waiting}']"),
                        ("/approvals/", f"[data-approval] a[href='/runs/{waiting}/']"),
                        ("/audit/", "#audit code"),
                        (f"/runs/{failed}/restart/?step=load", "#rerun li")):
        adam.goto(console.url + page)
        adam.wait_for_selector(shows)
        assert style(adam, ".topbar", "display") == "flex", page  # console.css applies

    adam.goto(console.url + "/admin/")
    assert style(adam, "#header", "background-color") not in ("rgba(0, 0, 0, 0)", "transparent")
    adam.goto(console.url + "/admin/forge_governance/agent/")
    adam.check("#action-toggle")  # actions.js counts what is selected
    adam.wait_for_function("() => /^(\\d+) of \\1 selected$/.test("
                           "document.querySelector('.action-counter').textContent.trim())")
    adam.goto(console.url + f"/admin/forge_governance/agent/{agent}/change/")
    assert style(adam, "input[name=_save]", "background-color") not in ("rgba(0, 0, 0, 0)", "transparent")
    console.shot(adam, "csp-admin-agent")
    adam.goto(console.url + "/admin/forge_schedules/schedule/")
    adam.wait_for_selector(f"#result_list a[href$='/schedule/{schedule}/change/']")
    adam.goto(console.url + f"/admin/forge_schedules/schedule/{schedule}/change/")
    adam.wait_for_selector("input[name=_save]")
    adam.goto(console.url + "/admin/forge_schedules/killswitch/")
    adam.fill("#id_reason", "checking the policy")
    adam.click("input[type=submit]")  # form-action 'self'
    adam.wait_for_selector(".messagelist :text('kill switch engaged')")
    assert re.search(r"Engaged\s+by adam", adam.inner_text("#content-main"))
