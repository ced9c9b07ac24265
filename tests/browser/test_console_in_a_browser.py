"""The console as people use it, in Chromium against daphne and a real cluster: run from the form, watch the
graph turn, decide from the inbox in a second browser, read a step, restart from a failed step, lose the
socket and come back to exactly what the database says."""

from __future__ import annotations

import re

import pytest

pytestmark = pytest.mark.slow

NEEDS_A_YES = """
name: needs_a_yes
args:
  vendor: {type: string, required: true}
steps:
  - {id: prepare, agent: mock, command: "prepare ${args.vendor}", mock: {outputs: {ready: true}}}
  - {id: sign_off, approval: required, approval_message: "ship ${args.vendor}?", depends_on: [prepare]}
  - {id: ship, agent: mock, command: ship, depends_on: [sign_off]}
"""
FAILS_LATE = """
name: fails_late
steps:
  - {id: fetch, agent: mock, command: fetch, mock: {outputs: {rows: 3}}}
  - {id: load, agent: mock, command: load, depends_on: [fetch], mock: {fail_times: 9, error: disk full}}
  - {id: report, agent: mock, command: report, depends_on: [load]}
"""
LIVE = "document.getElementById('live').dataset.state === 'live'"


def save(console, source: str) -> None:
    console.deployment.query("from forge.workflows.services import workflow_version_save\n"
                             f"result = workflow_version_save(user=None, source={source!r}).number")


def shown(page) -> dict[str, str]:
    return dict(zip(page.eval_on_selector_all("tr[data-step]", "rows => rows.map(r => r.dataset.step)"),
                    page.eval_on_selector_all("tr[data-step] [data-field=status]", "els => els.map(e => e.textContent)")))


def in_database(console, run_id: int) -> dict[str, str]:
    return {step: row["status"] for step, row in console.deployment.step_rows(run_id).items()}


def applied_once(page) -> bool:
    return page.evaluate("new Set(window.forgeRun.applied).size === window.forgeRun.applied.length")


def start_from_the_form(console, page, vendor: str) -> int:
    page.goto(console.url + "/workflows/needs_a_yes/")
    page.fill("#arg-vendor", vendor)
    page.click("#run-form button[type=submit]")
    page.wait_for_url(re.compile(r"/runs/\d+/$"))
    page.wait_for_function(LIVE)
    return int(re.search(r"/runs/(\d+)/", page.url).group(1))


def test_run_watch_and_approve_from_the_inbox_in_a_second_browser(console, browser):
    save(console, NEEDS_A_YES)
    olive = console.login(browser, "olive")
    run_id = start_from_the_form(console, olive, "Acme")
    olive.wait_for_function("document.querySelector('tr[data-step=sign_off] [data-field=status]').textContent === 'waiting'")
    olive.wait_for_function("document.querySelector('tr[data-step=sign_off] .why').textContent"
                            ".includes('waiting for approval by Approvers')")
    console.shot(olive, "run-waiting")

    april = console.login(browser, "april")
    april.goto(console.url + "/approvals/")
    card = april.locator(f".approval:has(a[href='/runs/{run_id}/'])")
    assert "ship Acme?" in card.inner_text() and "Started by olive" in card.inner_text()
    console.shot(april, "inbox")
    card.locator("input[name=comment]").fill("vendor checked")
    card.locator("button[value=approve]").click()
    april.wait_for_load_state()

    olive.wait_for_function("window.forgeRun.runStatus === 'completed'")  # no reload
    assert shown(olive) == in_database(console, run_id) == dict.fromkeys(["prepare", "sign_off", "ship"], "completed")
    assert applied_once(olive)
    olive.click("[data-open-step=sign_off]")
    olive.wait_for_selector(".step-panel[data-step=sign_off]")
    assert "Approved by april" in olive.inner_text("#step-panel") and "vendor checked" in olive.inner_text("#step-panel")
    console.shot(olive, "run-completed")


def test_reject_with_a_comment_and_read_it_on_the_run(console, browser):
    save(console, NEEDS_A_YES)
    olive = console.login(browser, "olive")
    run_id = start_from_the_form(console, olive, "Initech")
    april = console.login(browser, "april")
    april.goto(console.url + f"/runs/{run_id}/")
    april.fill("[data-approval] input[name=comment]", "no contract yet")
    april.click("[data-approval] button[value=reject]")
    april.wait_for_load_state()
    olive.wait_for_function("window.forgeRun.runStatus === 'failed'")
    olive.click("[data-open-step=sign_off]")
    olive.wait_for_selector(".step-panel[data-step=sign_off]")
    assert "Rejected by april" in olive.inner_text("#step-panel") and "no contract yet" in olive.inner_text("#step-panel")
    assert shown(olive) == in_database(console, run_id)
    console.shot(olive, "run-rejected")


def test_restart_a_failed_run_from_its_failed_step_after_reading_the_plan(console, browser):
    save(console, FAILS_LATE)
    olive = console.login(browser, "olive")
    olive.goto(console.url + "/workflows/fails_late/")
    olive.click("#run-form button[type=submit]")
    olive.wait_for_url(re.compile(r"/runs/\d+/$"))
    olive.wait_for_function("window.forgeRun.runStatus === 'failed'")
    olive.click("tr[data-step=load] .restart a")
    assert olive.locator("#rerun li").all_inner_texts() == ["load", "report"]
    assert "fetch" in olive.inner_text("#carried") and '"rows": 3' in olive.inner_text("#carried")
    console.shot(olive, "restart-plan")
    olive.click("button:has-text('Restart from load')")
    olive.wait_for_url(re.compile(r"/runs/\d+/$"))
    assert "carried" in olive.inner_text("tr[data-step=fetch]")
    assert "carried" not in olive.inner_text("tr[data-step=load]")
    console.shot(olive, "restarted")


def test_after_losing_the_socket_the_page_agrees_with_the_database(console, browser):
    save(console, NEEDS_A_YES)
    olive = console.login(browser, "olive")
    run_id = start_from_the_form(console, olive, "Globex")
    olive.wait_for_function("document.querySelector('tr[data-step=sign_off] [data-field=status]').textContent === 'waiting'")
    olive.evaluate("window.forgeRun.socket.close()")
    done = console.deployment.forge("--user", "april", "approve", str(run_id), "sign_off")
    assert done.returncode == 0, done.stderr
    olive.wait_for_function("window.forgeRun.runStatus === 'completed'")
    assert shown(olive) == in_database(console, run_id)
    assert applied_once(olive)

    second = start_from_the_form(console, olive, "Hooli")
    olive.wait_for_function("document.querySelector('tr[data-step=sign_off] [data-field=status]').textContent === 'waiting'")
    console.restart_daphne()
    done = console.deployment.forge("--user", "april", "approve", str(second), "sign_off")
    assert done.returncode == 0, done.stderr
    olive.wait_for_function("window.forgeRun.runStatus === 'completed'")
    olive.wait_for_function(LIVE)
    assert shown(olive) == in_database(console, second)
    assert applied_once(olive)
    console.shot(olive, "after-reconnect")


def test_an_outsider_sees_403(console, browser):
    otto = console.login(browser, "otto")
    response = otto.goto(console.url + "/")
    assert response.status == 403
    console.shot(otto, "outsider")
