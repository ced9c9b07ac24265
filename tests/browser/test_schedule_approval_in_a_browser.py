"""A schedule that requires approval, in Chromium against daphne and a real cluster: its due time starts a run
held before its first step; the run list says whose approval it waits for; an approver opens the inbox, reads
the card naming the schedule (id, workflow, cron, owner), approves, and the run goes on to completion."""

from __future__ import annotations

import json

import pytest

from tests.browser.test_console_in_a_browser import save
from tests.cluster.test_schedules_on_cluster import fall_due

pytestmark = pytest.mark.slow

NIGHTLY = """
name: nightly_ledger
args:
  region: {type: string, required: true}
steps:
  - {id: collect, agent: mock, command: "collect ${args.region}"}
  - {id: book, agent: mock, command: book, depends_on: [collect]}
"""


def held_run(console) -> tuple[int, int]:
    """Add olive's schedule that requires approval and let the cluster's clock fire it: (schedule, run)."""
    save(console, NIGHTLY)
    added = console.deployment.forge("--user", "olive", "schedule", "add", "nightly_ledger", "--cron", "30 2 * * *",
                                     "--tz", "Europe/Berlin", "--arg", "region=eu", "--require-approval", "--json")
    assert added.returncode == 0, added.stderr
    schedule = json.loads(added.stdout)["id"]
    fall_due(console.deployment, [schedule], minutes_ago=1)
    run = console.deployment.until(lambda: console.deployment.sql(
        "SELECT run_id FROM forge_runs_approval WHERE kind = 'start' AND status = 'pending'"), timeout=120,
        what="the scheduled run held for approval")[0][0]
    return schedule, run


@pytest.mark.parametrize("console", ["sqlite", "postgres"], indirect=True)
def test_an_approver_approves_a_held_scheduled_run_from_the_inbox_and_it_goes_on(console, browser):
    schedule, run_id = held_run(console)
    olive = console.login(browser, "olive")
    olive.goto(console.url + "/runs/")
    waiting = olive.locator(f"tr:has(a[href='/runs/{run_id}/']) [data-field=waiting]")
    assert waiting.inner_text() == f"waiting for approval to start (schedule #{schedule})"
    olive.goto(console.url + f"/runs/{run_id}/")
    assert olive.inner_text("tr[data-step=collect] .why") == f"waiting for approval to start (schedule #{schedule})"
    assert "You cannot decide this" in olive.inner_text("#decisions")  # an Operator, and the owner: not an approver
    console.shot(olive, "held-run-view")

    april = console.login(browser, "april")
    april.goto(console.url + "/approvals/")
    card = april.locator(f".approval[data-kind=start]:has(a[href='/runs/{run_id}/'])")
    text = card.inner_text()
    assert f"Schedule #{schedule} (workflow nightly_ledger, cron 30 2 * * * in Europe/Berlin, owner olive)" in text
    facts = {field: card.locator(f"[data-field={field}]").inner_text()
             for field in ("schedule", "workflow", "cron", "owner", "approvers", "args")}
    assert facts["schedule"] == f"schedule #{schedule}" and facts["workflow"] == "nightly_ledger"
    assert facts["cron"] == "30 2 * * * in Europe/Berlin" and facts["owner"].startswith("olive")
    assert (facts["approvers"], facts["args"]) == ("Approvers", 'region = "eu"')
    console.shot(april, "inbox-start-card")
    assert console.deployment.sql("SELECT count(*) FROM forge_runs_stepresult WHERE run_id = %s "
                                  "AND started_at IS NOT NULL", (run_id,))[0][0] == 0  # nothing ran yet

    card.locator("input[name=comment]").fill("books are open")
    card.locator("button[value=approve]").click()
    console.deployment.until(lambda: console.deployment.sql("SELECT status FROM forge_runs_run WHERE id = %s",
                                                            (run_id,))[0][0] == "completed",
                             timeout=120, what="the approved run completed")
    april.goto(console.url + f"/runs/{run_id}/")
    april.wait_for_function("() => window.forgeRun && window.forgeRun.runStatus === 'completed'")
    assert april.inner_text("tr[data-step=book] [data-field=status]") == "completed"
    console.shot(april, "approved-run-completed")
    april.goto(console.url + "/approvals/")
    assert april.locator(".approval[data-kind=start]").count() == 0
