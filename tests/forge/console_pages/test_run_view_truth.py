"""The run view says what is true of each step, from one writer: a run's pages compile its workflow with the
library it kept, the round's step events carry the sentence, the status word, times, cost and tokens the table
shows, and a step that never ran reads so, on the page and in the CLI."""

import io
import json
import re

import pytest
from django.core.management import call_command
from django.urls import reverse

from forge.runs.reads.stream import events_frame, snapshot_if_too_far
from forge.runs import services
from forge.runs.models import Approval, Run, RunEvent, StepOutput, StepResult
from forge.runtime.rounds import advance
from forge.workflows.models import StepLibraryEntry
from tests.forge.conftest import fast_forward

pytestmark = pytest.mark.django_db

USES_LIBRARY = """
name: uses_library
steps:
  - {id: fetch, library_step: fetch_report}
  - {id: publish, agent: mock, command: publish, depends_on: [fetch]}
"""
RETRIES = """
name: retries
steps:
  - {id: flaky, agent: mock, command: go, retry: {max_retries: 2, backoff_s: 600},
     mock: {fail_times: 1, error: connection reset}}
  - {id: after, agent: mock, command: after, depends_on: [flaky]}
"""
UPSTREAM_FAILS = """
name: upstream_fails
steps:
  - {id: load, agent: mock, command: load, mock: {fail_times: 9, error: disk full}}
  - {id: report, agent: mock, command: report, depends_on: [load]}
  - {id: mail, agent: mock, command: mail, depends_on: [report]}
"""
FAN_IN = """
name: fan_in
steps:
  - {id: gate, approval: required}
""" + "".join(f"  - {{id: p{i}, agent: mock, command: go, depends_on: [gate]}}\n" for i in range(8)) + """
  - {id: join, agent: mock, command: join, depends_on: [p0, p1, p2, p3, p4, p5, p6, p7]}
"""


def row(html: str, step: str) -> str:
    return re.search(rf'<tr data-step="{step}".*?</tr>', html, re.S).group(0)


def step_events(run, step: str) -> list[dict]:
    return [e.data for e in RunEvent.objects.filter(run=run, kind="step", step=step).order_by("id")]


# -- point 2: a run's workflow is compiled with the library it kept ---------------------------------------------

def test_a_finished_run_whose_library_entry_was_deleted_still_shows_its_pages(client, save_workflow, operator):
    StepLibraryEntry.objects.create(name="fetch_report", definition={"agent": "mock", "command": "fetch"})
    run = fast_forward(services.run_start(user=operator, version=save_workflow(USES_LIBRARY)))
    assert run.status == "completed"
    StepLibraryEntry.objects.filter(name="fetch_report").delete()
    StepLibraryEntry.objects.create(name="other", definition={"agent": "mock", "command": "other"})
    client.force_login(operator)

    page = client.get(reverse("console:run", args=[run.pk]))
    assert page.status_code == 200
    assert "completed" in row(page.content.decode(), "fetch")
    panel = client.get(reverse("console:step", args=[run.pk, "fetch"]))
    assert panel.status_code == 200 and "fetch" in panel.content.decode()
    plan = client.get(reverse("console:restart", args=[run.pk]), {"step": "publish"})
    assert plan.status_code == 200
    html = plan.content.decode()
    assert "publish" in html and "fetch" in html  # fetch is carried, publish runs again

    # Restarting it uses the library the run kept too: the new run completes.
    restarted = fast_forward(services.run_restart(user=operator, run=run, step="publish"))
    assert restarted.status == "completed"
    assert client.get(reverse("console:run", args=[restarted.pk])).status_code == 200
    # A new run of the version is compiled with today's library, which no longer completes it: refused.
    with pytest.raises(services.ServiceError, match="not valid"):
        services.run_start(user=operator, version=run.version)
    # Its page says so, and offers no Run form, instead of a 500.
    page = client.get(reverse("console:workflow", args=[run.workflow.name]))
    html = page.content.decode()
    assert page.status_code == 200
    assert "Version 1 cannot run with today&#x27;s step library" in html and 'id="run-form"' not in html
    posted = client.post(reverse("console:workflow", args=[run.workflow.name]), {"version": "1"}, follow=True)
    assert posted.status_code == 200 and "Nothing was started" in posted.content.decode()
    assert Run.objects.count() == 2  # the run and its restart, no other


def test_an_edited_library_entry_does_not_change_a_run_compiled_before(save_workflow, operator):
    from forge.runs.compiled import run_workflow

    entry = StepLibraryEntry.objects.create(name="fetch_report", definition={"agent": "mock", "command": "fetch"})
    version = save_workflow(USES_LIBRARY)
    first = services.run_start(user=operator, version=version)
    entry.definition = {"agent": "mock", "command": "fetch-v2"}
    entry.save()
    second = services.run_start(user=operator, version=version)
    assert run_workflow(first).by_id["fetch"].model.command == "fetch"
    assert run_workflow(second).by_id["fetch"].model.command == "fetch-v2"


# -- point 3: the sentence comes from the server, in the event, during the real state ----------------------------

def test_during_a_retry_backoff_the_event_and_the_page_say_the_retry(client, save_workflow, operator):
    run = services.run_start(user=operator, version=save_workflow(RETRIES))
    for _ in range(10):  # now only: the retry's timer (600 s) is never brought forward
        advance(run.pk)
    flaky = StepResult.objects.get(run=run, step="flaky")
    assert (flaky.status, flaky.wait) == ("pending", "retry")
    said = "waiting to retry after attempt 1 failed: connection reset"
    assert step_events(run, "flaky")[-1]["why"] == said
    client.force_login(operator)
    html = client.get(reverse("console:run", args=[run.pk])).content.decode()
    assert said in row(html, "flaky")
    assert "waiting for upstream flaky" in row(html, "after")


def test_an_approval_says_who_may_decide_and_until_when(save_workflow, operator):
    run = services.run_start(user=operator, version=save_workflow("""
name: timed
steps:
  - {id: sign, approval: required, approvers: [april], timeout: 3600}
"""))
    advance(run.pk)
    said = step_events(run, "sign")[-1]["why"]
    expires = Approval.objects.get(run=run).expires_at
    assert said == f"waiting for approval by april until {expires:%Y-%m-%d %H:%M:%S} UTC"


def test_queued_steps_wait_for_a_slot_and_an_ended_step_tells_the_new_sentence_of_the_steps_after_it(
        settings, save_workflow, operator):
    settings.FORGE_RUNNER_CONCURRENCY = 1  # one p step at a time: the rest queue, and end in rounds of their own
    run = services.run_start(user=operator, version=save_workflow(FAN_IN))
    advance(run.pk)
    services.approval_decide(user=None, approval=Approval.objects.get(run=run), decision="approve")
    fast_forward(run)
    assert run.status == "completed"
    assert step_events(run, "p7")[0]["why"] == "waiting for a free concurrency slot"
    told = [e.data["downstream"]["join"] for e in RunEvent.objects.filter(run=run, kind="step").order_by("id")
            if "join" in e.data.get("downstream", {})]
    # Each p step that ended said join's new sentence (five upstream steps named, the rest counted).
    assert told[0] == "waiting for upstream p1, p2, p3, p4, p5 and 2 more"
    assert told[-1] == "waiting for upstream p7"
    assert len(told) == 7  # the last one to end let join start: join's own event speaks for it


# -- point 6: a step that never ran has its own word ----------------------------------------------------------

def test_a_step_that_never_ran_reads_not_run_on_the_page_and_in_the_cli(client, save_workflow, operator):
    run = fast_forward(services.run_start(user=operator, version=save_workflow(UPSTREAM_FAILS)))
    assert run.status == "failed"
    client.force_login(operator)
    html = client.get(reverse("console:run", args=[run.pk])).content.decode()
    assert 'status-failed" data-field="status">failed<' in row(html, "load")
    for step in ("report", "mail"):
        assert 'status-upstream-failed" data-field="status">not run: upstream failed<' in row(html, step)
    data = json.loads(re.search(r'<script id="run-data" type="application/json">(.*?)</script>', html, re.S).group(1))
    words = {n["id"]: (n["word"], n["error_code"]) for n in data["nodes"]}
    assert words["report"] == ("not run: upstream failed", "upstream_failed")
    assert step_events(run, "mail")[-1]["word"] == "not run: upstream failed"

    out = io.StringIO()
    call_command("forge", "status", str(run.pk), stdout=out)
    lines = {line.split()[0]: line for line in out.getvalue().splitlines() if line.strip()}
    assert "not run: upstream failed" in lines["report"] and "not run: upstream failed" in lines["mail"]
    assert "not run" not in lines["load"] and "disk full" in lines["load"]

    out = io.StringIO()
    call_command("forge", "status", str(run.pk), "--json", stdout=out)
    report = json.loads(out.getvalue())
    assert report["steps"]["report"]["status"] == "failed"
    assert report["steps"]["report"]["error_code"] == "upstream_failed"
    assert "word" not in report["steps"]["report"]


# -- point 8: step events and snapshots carry what the table shows --------------------------------------------

def test_step_events_carry_the_times_cost_and_tokens_the_table_shows(client, run, operator):
    prepare = step_events(run, "prepare")
    done = prepare[-1]
    assert done["status"] == "completed" and done["started_at"] and done["finished_at"]
    assert isinstance(done["cost"], float) and isinstance(done["tokens"], int)
    row_ = StepResult.objects.get(run=run, step="prepare")
    assert done["finished_at"] == row_.finished_at.isoformat() and done["started_at"] == row_.started_at.isoformat()
    assert all(e["finished_at"] is None for e in prepare[:-1])  # a step ends once
    text, last, count = events_frame(run.pk, 0)
    sent = json.loads(text)["events"]
    streamed = [e for e in sent if e["kind"] == "step" and e["step"] == "prepare"]
    assert streamed[-1]["data"] == done
    assert streamed[-1]["at"] == RunEvent.objects.get(pk=streamed[-1]["id"]).at.isoformat()
    # What the interpreter was fed is not sent (the page shows none of it); everything else is, in order.
    shown = list(RunEvent.objects.filter(run=run).exclude(kind="input").order_by("id").values_list("id", flat=True))
    assert [e["id"] for e in sent] == shown and (last, count) == (shown[-1], len(shown))
    assert events_frame(run.pk, last) is None


def test_a_snapshot_carries_the_fields_of_the_step_events(settings, run):
    settings.FORGE_LIVE_REPLAY_MAX = 1
    snapshot = snapshot_if_too_far(run.pk, 0)
    prepare, ship = snapshot["steps"]["prepare"], snapshot["steps"]["ship"]
    assert set(step_events(run, "prepare")[-1]) - {"downstream"} <= set(prepare)
    assert prepare["finished_at"] == StepResult.objects.get(run=run, step="prepare").finished_at.isoformat()
    assert ship["why"] == "waiting for upstream sign_off"
    assert snapshot["steps"]["sign_off"]["why"] == "waiting for approval by Approvers"


def test_the_why_endpoint_is_gone(client, run, operator):
    client.force_login(operator)
    assert client.get(f"/runs/{run.pk}/why/").status_code == 404


def test_a_cancelled_steps_panel_keeps_what_it_printed(client, run, operator):
    # What the worker kept of a shell step's output while it ran; the step was cancelled before it ended.
    StepOutput.objects.create(run=run, step="sign_off", attempt=1, stdout="napping now\n", stderr="")
    services.run_cancel(user=operator, run=run)
    fast_forward(run)
    assert StepResult.objects.get(run=run, step="sign_off").status == "cancelled"
    client.force_login(operator)
    html = client.get(reverse("console:step", args=[run.pk, "sign_off"])).content.decode()
    assert "napping now" in html and "printed before it stopped" in html


def test_a_step_that_never_ran_reads_not_run_in_its_panel_s_heading_as_in_the_table(client, save_workflow, operator):
    run = fast_forward(services.run_start(user=operator, version=save_workflow(UPSTREAM_FAILS)))
    client.force_login(operator)
    heading = {step: re.search(r"<h2>.*?</h2>", client.get(reverse("console:step", args=[run.pk, step]))
                               .content.decode(), re.S).group(0) for step in ("load", "report")}
    assert '<span class="status status-failed">failed</span>' in heading["load"]
    assert '<span class="status status-upstream-failed">not run: upstream failed</span>' in heading["report"]


@pytest.mark.parametrize("micro", [0, 1, 120000, 999999])
def test_a_streamed_event_time_reads_as_the_stored_time_whatever_its_fraction(run, micro):
    event = RunEvent.objects.filter(run=run).exclude(kind="input").order_by("id").first()
    at = event.at.replace(microsecond=micro)
    RunEvent.objects.filter(pk=event.pk).update(at=at)
    sent = json.loads(events_frame(run.pk, event.pk - 1)[0])["events"][0]
    assert sent["id"] == event.pk and sent["at"] == at.isoformat()
