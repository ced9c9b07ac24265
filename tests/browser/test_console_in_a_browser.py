"""The console as people use it, in Chromium against daphne and a real cluster: run from the form, watch the
graph turn, decide from the inbox in a second browser, read a step, restart from a failed step, lose the
socket and come back to exactly what the database says."""

from __future__ import annotations

import re

import pytest

from engine.terminal import status_word
from tests.sandboxed import kill_all, marker, pids_sleeping

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
# The nap sleeps until it is stopped, for a duration no other process uses (its pids in its sandbox are not the
# test's to see).
SLEEPS = """
name: sleeps
args:
  seconds: {type: string, required: true}
steps:
  - {id: warm, agent: mock, command: warm}
  - id: nap
    agent: shell
    command: >-
      echo napping now; echo still awake >&2; sleep ${args.seconds}
    depends_on: [warm]
  - {id: after, agent: mock, command: after, depends_on: [nap]}
"""
# Predicates are functions: Playwright evaluates a function once, where an expression would be evaluated again at
# every poll, which the Content-Security-Policy (no 'unsafe-eval') refuses after the first.
LIVE = "() => document.getElementById('live').dataset.state === 'live'"


def status_is(step: str, status: str) -> str:
    return f"() => document.querySelector('tr[data-step={step}] [data-field=status]').textContent === '{status}'"


def start_runs(console, *vendors: str) -> list[int]:
    return console.deployment.query(
        "from django.contrib.auth.models import User\nfrom forge.runs import services\n"
        "from forge.workflows.models import Workflow\n"
        "version = Workflow.objects.get(name='needs_a_yes').latest_version()\n"
        f"result = [services.run_start(user=User.objects.get(username='olive'), version=version, "
        f"args={{'vendor': v}}).pk for v in {list(vendors)!r}]")


def event_ids(console, run_id: int) -> list[int]:
    """The events a page is sent: all but what the interpreter was fed (forge/runs/reads/stream.py)."""
    return [i for (i,) in console.deployment.sql(
        "SELECT id FROM forge_runs_runevent WHERE run_id = %s AND kind <> 'input' ORDER BY id", (run_id,))]


def save(console, source: str) -> None:
    console.deployment.query("from forge.workflows.services import workflow_version_save\n"
                             f"result = workflow_version_save(user=None, source={source!r}).number")


def save_and_start(console, source: str, workflow: str) -> int:
    """Save `source` (the workflow named `workflow`) and start a run of it as olive; the run's id."""
    save(console, source)
    return console.deployment.query(
        "from django.contrib.auth.models import User\nfrom forge.runs import services\n"
        "from forge.workflows.models import Workflow\n"
        "result = services.run_start(user=User.objects.get(username='olive'), "
        f"version=Workflow.objects.get(name={workflow!r}).latest_version()).pk")


def shown(page) -> dict[str, str]:
    rows = "#steps-card tr[data-step]"  # the steps table's (a step panel's rows name their step too)
    return dict(zip(page.eval_on_selector_all(rows, "rows => rows.map(r => r.dataset.step)"),
                    page.eval_on_selector_all(rows + " [data-field=status]", "els => els.map(e => e.textContent)")))


def in_database(console, run_id: int) -> dict[str, str]:
    """The word the table should show for each step's row (a step that never ran reads so)."""
    return {step: status_word(row["status"], row["error_code"])
            for step, row in console.deployment.step_rows(run_id).items()}


def applied_every_event_once(console, page, run_id: int) -> bool:
    """The page applied each event after the one it was rendered with, in order, none skipped, none twice."""
    rendered = page.evaluate("JSON.parse(document.getElementById('run-data').textContent).last_event_id")
    written = [i for i in event_ids(console, run_id) if i > rendered]
    page.wait_for_function(f"() => window.forgeRun.lastApplied >= {written[-1]}")
    return page.evaluate("window.forgeRun.applied") == written


def start_from_the_form(console, page, vendor: str) -> int:
    page.goto(console.url + "/workflows/needs_a_yes/")
    page.wait_for_function("() => window.forgeWorkflow && window.forgeWorkflow.drawnAt !== null")  # its graph
    page.fill("#arg-vendor", vendor)
    page.click("#run-form button[type=submit]")
    page.wait_for_url(re.compile(r"/runs/\d+/$"))
    page.wait_for_function(LIVE)
    return int(re.search(r"/runs/(\d+)/", page.url).group(1))


def test_run_watch_and_approve_from_the_inbox_in_a_second_browser(console, browser):
    save(console, NEEDS_A_YES)
    olive = console.login(browser, "olive")
    run_id = start_from_the_form(console, olive, "Acme")
    olive.wait_for_function(status_is("sign_off", "waiting"))
    olive.wait_for_function("() => document.querySelector('tr[data-step=sign_off] .why').textContent"
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

    olive.wait_for_function("() => window.forgeRun.runStatus === 'completed'")  # no reload
    assert shown(olive) == in_database(console, run_id) == dict.fromkeys(["prepare", "sign_off", "ship"], "completed")
    assert applied_every_event_once(console, olive, run_id)
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
    olive.wait_for_function("() => window.forgeRun.runStatus === 'failed'")
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
    olive.wait_for_function("() => window.forgeRun.runStatus === 'failed'")
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
    olive.wait_for_function(status_is("sign_off", "waiting"))
    olive.evaluate("window.forgeRun.socket.close()")
    done = console.deployment.forge("--user", "april", "approve", str(run_id), "sign_off")
    assert done.returncode == 0, done.stderr
    olive.wait_for_function("() => window.forgeRun.runStatus === 'completed'")
    assert shown(olive) == in_database(console, run_id)
    assert applied_every_event_once(console, olive, run_id)

    second = start_from_the_form(console, olive, "Hooli")
    olive.wait_for_function(status_is("sign_off", "waiting"))
    console.restart_daphne()
    done = console.deployment.forge("--user", "april", "approve", str(second), "sign_off")
    assert done.returncode == 0, done.stderr
    olive.wait_for_function("() => window.forgeRun.runStatus === 'completed'")
    olive.wait_for_function(LIVE)
    assert shown(olive) == in_database(console, second)
    assert applied_every_event_once(console, olive, second)
    console.shot(olive, "after-reconnect")


def test_an_outsider_sees_403(console, browser):
    otto = console.login(browser, "otto")
    response = otto.goto(console.url + "/")
    assert response.status == 403
    console.shot(otto, "outsider")


def test_cancel_a_running_run_whose_shell_step_sleeps_and_see_it_stop(console, browser, tmp_path):
    save(console, SLEEPS)
    seconds = marker()
    olive = console.login(browser, "olive")
    olive.goto(console.url + "/workflows/sleeps/")
    olive.fill("#arg-seconds", seconds)
    olive.click("#run-form button[type=submit]")
    olive.wait_for_url(re.compile(r"/runs/\d+/$"))
    run_id = int(re.search(r"/runs/(\d+)/", olive.url).group(1))
    try:
        console.deployment.until(lambda: pids_sleeping(seconds), timeout=120, what="the nap started")
        olive.wait_for_function(status_is("nap", "running"))
        olive.click("[data-open-step=nap]")  # what it printed so far, while it runs
        olive.wait_for_function("() => document.getElementById('step-stdout')?.textContent.includes('napping now')")
        assert "still awake" in olive.inner_text("#step-stderr")
        console.shot(olive, "run-output-so-far")
        said = []
        olive.once("dialog", lambda dialog: (said.append(dialog.message), dialog.accept()))
        olive.click("#cancel-form button")
        olive.wait_for_function("() => window.forgeRun.runStatus === 'cancelled'")
        assert "Running or waiting steps stop: nap" in said[0]
        console.deployment.until(lambda: not pids_sleeping(seconds), timeout=120, what="the nap's sleep stopped")
        olive.wait_for_function(status_is("nap", "cancelled"))
        # Its panel keeps what it printed before it was stopped (the worker's copy; the step row has none).
        olive.click("[data-open-step=nap]")
        olive.wait_for_function("() => document.querySelector('.step-panel h2 .status')?.textContent === 'cancelled'")
        assert "napping now" in olive.inner_text("#step-stdout")
        assert shown(olive) == in_database(console, run_id)
        assert in_database(console, run_id) == {"warm": "completed", "nap": "cancelled", "after": "cancelled"}
        console.shot(olive, "run-cancelled")
    finally:
        kill_all(pids_sleeping(seconds))


def test_the_inbox_badge_and_runs_list_follow_along_without_a_reload(console, browser):
    save(console, NEEDS_A_YES)
    olive = console.login(browser, "olive")
    olive.goto(console.url + "/runs/")
    april = console.login(browser, "april")
    april.goto(console.url + "/approvals/")
    adam = console.login(browser, "adam")
    adam.goto(console.url + "/approvals/")
    for page in (olive, april, adam):
        page.wait_for_selector("[data-live-indicator][data-state=live]")

    [first] = start_runs(console, "Acme")
    olive.wait_for_selector(f"tr[data-run='{first}'] .status-running")
    for page in (april, adam):
        page.wait_for_selector(f"[data-approval] a[href='/runs/{first}/']")
        page.wait_for_function("() => document.getElementById('approvals-badge').textContent === '1'")
    adam.fill("[data-approval] input[name=comment]", "half a thought")  # a comment being typed survives
    [second] = start_runs(console, "Globex")
    adam.wait_for_selector(f"[data-approval] a[href='/runs/{second}/']")
    adam.wait_for_function("() => document.getElementById('approvals-badge').textContent === '2'")
    assert adam.input_value(f"[data-approval]:has(a[href='/runs/{first}/']) input[name=comment]") == "half a thought"
    console.shot(adam, "inbox-live")

    card = april.locator(f"[data-approval]:has(a[href='/runs/{first}/'])")
    card.locator("input[name=comment]").fill("fine")
    card.locator("button[value=approve]").click()
    adam.wait_for_selector(f"[data-approval] a[href='/runs/{first}/']", state="detached")
    adam.wait_for_function("() => document.getElementById('approvals-badge').textContent === '1'")
    olive.wait_for_selector(f"tr[data-run='{first}'] .status-completed")
    assert olive.inner_text(f"tr[data-run='{second}'] .status") == "running"
    console.shot(olive, "runs-live")


def test_fifty_viewers_of_one_run_and_ten_of_another_each_see_exactly_their_run_s_events(console, browser):
    save(console, NEEDS_A_YES)
    first, second = start_runs(console, "Initech", "Hooli")
    april = console.login(browser, "april")
    april.goto(console.url + "/approvals/")
    april.evaluate("""([first, second]) => {
      window.viewers = [];
      for (const [run, count] of [[first, 50], [second, 10]]) {
        for (let i = 0; i < count; i++) {
          const viewer = { run, ids: [], types: [], open: false };
          const socket = new WebSocket("ws://" + location.host + "/ws/runs/" + run + "/?after=0");
          socket.onopen = () => { viewer.open = true; };
          socket.onmessage = (m) => {
            const message = JSON.parse(m.data);
            viewer.types.push(message.type);
            if (message.type === "events") viewer.ids.push(...message.events.map((e) => e.id));
          };
          window.viewers.push(viewer);
        }
      }
    }""", [first, second])
    april.wait_for_function("() => window.viewers.every((v) => v.open)")
    for run_id in (first, second):
        done = console.deployment.forge("--user", "april", "approve", str(run_id), "sign_off")
        assert done.returncode == 0, done.stderr
        assert console.deployment.finished(run_id)["status"] == "completed"
    expected = {first: event_ids(console, first), second: event_ids(console, second)}
    april.wait_for_function("([last]) => window.viewers.every((v) => v.ids[v.ids.length - 1] === last[v.run])",
                            arg=[{str(run): ids[-1] for run, ids in expected.items()}])
    viewers = april.evaluate("window.viewers")
    assert [v["run"] for v in viewers] == [first] * 50 + [second] * 10
    for viewer in viewers:
        assert viewer["ids"] == expected[viewer["run"]]  # every event of its run, in order, once, and no other
        assert set(viewer["types"]) == {"events"}
