"""The run header as a person reads it in Chromium: the arguments, a duration that ticks while the run is live and
stops at its end, how the run was started (a person, a schedule), Run again with a changed argument, and a main
button that restarts from the step selected."""

from __future__ import annotations

import re

import pytest

pytestmark = pytest.mark.slow

PHASED = """
name: phased_sign_off
phases: [prepare, release]
args:
  vendor: {type: string, required: true}
  notes: {type: string, default: ""}
steps:
  - {id: prepare, name: Prepare the order, phase: prepare, agent: mock, command: "prepare ${args.vendor}",
     mock: {outputs: {ready: true}}}
  - {id: sign_off, name: Sign it off, phase: release, approval: required, approval_message: "ship ${args.vendor}?",
     depends_on: [prepare]}
  - {id: ship, phase: release, agent: mock, command: ship, depends_on: [sign_off]}
"""
FAILS_LATE = """
name: fails_late_nightly
steps:
  - {id: fetch, name: Fetch the rows, agent: mock, command: fetch, mock: {outputs: {rows: 3}}}
  - {id: load, agent: mock, command: load, depends_on: [fetch], mock: {fail_times: 9, error: disk full}}
  - {id: report, agent: mock, command: report, depends_on: [load]}
"""
LIVE = "() => document.getElementById('live').dataset.state === 'live'"
NOTES = "; ".join(["deliver to the loading dock at the back of building 7"] * 4)
DURATION = "() => document.getElementById('run-duration').textContent"


def save(console, source: str) -> None:
    console.deployment.query("from forge.workflows.services import workflow_version_save\n"
                             f"result = workflow_version_save(user=None, source={source!r}).number")


def run_id_of(page) -> int:
    return int(re.search(r"/runs/(\d+)/", page.url).group(1))


def wide(console, browser, name: str):
    return console.login_in(browser.new_context(viewport={"width": 1440, "height": 1000}), name)


@pytest.mark.parametrize("console", ["sqlite"], indirect=True)
def test_the_clock_ticks_then_stops_and_run_again_starts_a_changed_run(console, browser):
    save(console, PHASED)
    olive = wide(console, browser, "olive")
    olive.goto(console.url + "/workflows/phased_sign_off/")
    olive.fill("#arg-vendor", "Acme")
    olive.fill("#arg-notes", NOTES)
    olive.click("#run-form button[type=submit]")
    olive.wait_for_url(re.compile(r"/runs/\d+/$"))
    olive.wait_for_function(LIVE)
    first = run_id_of(olive)
    head = olive.locator("header.run-head")
    assert "Started by olive" in head.inner_text()
    assert olive.inner_text("[data-arg=vendor]") == "vendor = Acme"
    notes = olive.locator("[data-arg=notes]")
    assert f"show all ({len(NOTES)} characters)" in notes.inner_text() and not notes.locator("pre").is_visible()
    notes.locator("summary").click()
    assert notes.locator("pre").inner_text() == NOTES
    assert "prepare (1 step) → release (2 steps)" in olive.inner_text("#run-phases")
    assert "Sign it off" in olive.inner_text("#steps tr[data-step=sign_off]")

    # Live: the clock ticks while the run waits for a person.
    olive.wait_for_function("() => document.querySelector('#steps tr[data-step=sign_off] [data-field=status]')"
                            ".textContent === 'waiting'")
    seen = olive.evaluate(DURATION)
    olive.wait_for_function(f"() => document.getElementById('run-duration').textContent !== {seen!r}")
    assert olive.is_visible("#run-duration-live") and not olive.is_visible("#run-main-action")
    console.shot(olive, "run-head-live")

    done = console.deployment.forge("--user", "april", "approve", str(first), "sign_off")
    assert done.returncode == 0, done.stderr
    olive.wait_for_function("() => window.forgeRun.runStatus === 'completed'")
    olive.wait_for_function("() => document.getElementById('run-duration').dataset.end !== ''")
    fixed = olive.evaluate(DURATION)
    assert not olive.is_visible("#run-duration-live")
    olive.wait_for_timeout(2200)  # two ticks of a clock that would still run
    assert olive.evaluate(DURATION) == fixed

    # With no step selected an ended run that did not fail offers Run again; selecting a step offers its restart.
    assert not olive.is_visible("#run-main-action")
    olive.click("[data-open-step=prepare]")
    olive.wait_for_selector(".step-panel[data-step=prepare]")
    main = olive.locator("#run-main-action")
    assert main.is_visible() and main.inner_text() == "Restart from prepare"
    assert main.get_attribute("href") == f"/runs/{first}/restart/?step=prepare"
    assert "Prepare the order" in olive.inner_text("#step-panel")
    assert olive.locator("#panel-restart").inner_text() == "Restart from prepare"
    console.shot(olive, "run-head-selected")

    olive.click("#run-again")
    olive.wait_for_url(re.compile(rf"/workflows/phased_sign_off/\?run_again={first}$"))
    assert olive.input_value("#arg-vendor") == "Acme"
    assert "Filled with the arguments of run" in olive.inner_text("#run-again-note")
    console.shot(olive, "run-again-form")
    olive.fill("#arg-vendor", "Globex")
    olive.click("#run-form button[type=submit]")
    olive.wait_for_url(re.compile(r"/runs/\d+/$"))
    assert run_id_of(olive) != first
    assert olive.inner_text("[data-arg=vendor]") == "vendor = Globex"
    assert "deliver to the loading dock" in olive.inner_text("[data-arg=notes]")
    console.shot(olive, "run-head-run-again-started")

    olive.set_viewport_size({"width": 390, "height": 844})  # on a phone the header fits its width
    olive.wait_for_function("() => document.querySelector('header.run-head').getBoundingClientRect().right <= 390")
    assert olive.evaluate("() => document.querySelector('header.run-head').scrollWidth "
                          "<= document.querySelector('header.run-head').clientWidth")
    console.shot(olive, "run-head-phone")


@pytest.mark.parametrize("console", ["sqlite"], indirect=True)
def test_a_scheduled_run_says_so_and_restarts_from_its_failed_step_or_the_one_selected(console, browser):
    save(console, FAILS_LATE)
    run_id = console.deployment.query(
        "from datetime import datetime, UTC\nfrom django.contrib.auth.models import User\n"
        "from forge.schedules import services\nfrom forge.schedules.firing import fire_due_schedules\n"
        "from forge.schedules.models import ScheduleFire\nfrom forge.workflows.models import Workflow\n"
        "schedule = services.schedule_add(user=User.objects.get(username='olive'), "
        "workflow=Workflow.objects.get(name='fails_late_nightly'), cron='0 2 * * *', "
        "now=datetime(2030, 1, 14, 1, 0, tzinfo=UTC))\n"
        "fire_due_schedules(now=datetime(2030, 1, 14, 2, 0, tzinfo=UTC))\n"
        "result = ScheduleFire.objects.get(schedule=schedule).run_id")
    olive = wide(console, browser, "olive")
    olive.goto(console.url + f"/runs/{run_id}/")
    olive.wait_for_function(LIVE)
    olive.wait_for_function("() => window.forgeRun.runStatus === 'failed'")
    origin = olive.inner_text("#run-origin")
    assert re.match(r"Started by schedule \d+ \(0 2 \* \* \*, due 2030-01-14 02:00 UTC\) as olive", origin), origin
    main = olive.locator("#run-main-action")
    main.wait_for(state="visible")  # the run may have failed after the page was drawn
    assert main.inner_text() == "Restart from the failed step (load)"
    olive.click("[data-open-step=fetch]")
    olive.wait_for_function("() => document.getElementById('run-main-action').textContent === 'Restart from fetch'")
    console.shot(olive, "run-head-scheduled-failed")
    main.click()
    olive.wait_for_url(re.compile(rf"/runs/{run_id}/restart/\?step=fetch$"))

    april = wide(console, browser, "april")  # an approver may not restart or start runs: neither is offered
    april.goto(console.url + f"/runs/{run_id}/")
    assert april.locator("#run-main-action").count() == 0 and april.locator("#run-again").count() == 0
