"""The run view's panes read from the server: each attempt's own duration and the waits apart (the step panel, the
Gantt's and the status list's first picture), and the run log (the page's, and its download). Every bad query
parameter gets a clear 400 and changes nothing."""

from __future__ import annotations

import json
import re
from datetime import timedelta

import pytest
from django.urls import reverse
from django.utils import timezone

from forge.runs.reads.attempts import fold, step_times
from forge.runs import services
from forge.runs.models import Approval, RunEvent
from tests.forge.conftest import fast_forward

FLAKY = """
name: flaky
steps:
  - id: fetch
    agent: mock
    command: fetch
    retry: {max_retries: 2, backoff_s: 1}
    mock: {fail_times: 1, error: connection reset}
  - id: load
    agent: mock
    command: load
    on_failure: retry_once_then_escalate
    depends_on: [fetch]
    mock:
      fail_times: 2
      error: "Traceback (most recent call last):\\n  File x\\n  File y\\n  File z\\n  File w\\n  File v\\n  File u\\n  File t\\nValueError: disk full"
  - {id: report, agent: mock, command: report, depends_on: [load], mock: {stdout: "rows: 3\\nall good"}}
"""


class Clock:
    """The rounds' clock: now, moved on a little at every reading (so an attempt takes some time) and by `later`."""

    def __init__(self):
        self.at = timezone.now()

    def __call__(self):
        self.at += timedelta(milliseconds=20)
        return self.at

    def later(self, seconds: float) -> None:
        self.at += timedelta(seconds=seconds)


@pytest.fixture
def clock(monkeypatch):
    clock = Clock()
    monkeypatch.setattr(timezone, "now", clock)
    return clock


@pytest.fixture
def decided_later(save_workflow, operator, approver, clock):
    """fetch fails once and is retried after a backoff; load fails twice, is escalated, and a person chooses
    Retry 42 s later; its third attempt succeeds."""
    run = fast_forward(services.run_start(user=operator, version=save_workflow(FLAKY)))
    escalation = Approval.objects.get(run=run, status=Approval.PENDING)
    clock.later(42)
    services.approval_decide(user=approver, approval=escalation, decision="retry")
    return fast_forward(run)


def test_an_attempt_takes_its_own_time_and_the_decision_after_it_is_a_wait_of_its_own(decided_later):
    load = step_times(decided_later, "load")
    assert [a.number for a in load.attempts] == [1, 2, 3]
    assert [a.status for a in load.attempts] == ["failed", "failed", "completed"]
    second = load.attempts[1]
    assert 0 < second.seconds < 2  # it failed at once: the 42 s after it are the person's
    escalation = [w for w in load.waits if w.kind == "escalation"]
    assert len(escalation) == 1 and escalation[0].seconds >= 42 and escalation[0].after == 2
    assert (load.attempts[2].started_at - second.started_at).total_seconds() >= 42
    fetch = step_times(decided_later, "fetch")
    assert [a.status for a in fetch.attempts] == ["failed", "completed"]
    assert [w.kind for w in fetch.waits if w.after == 1] == ["backoff", "queue"]
    assert all(w.ended_at is not None for w in fetch.waits + load.waits)


def test_the_step_panel_shows_each_attempts_duration_and_the_waits_apart(client, decided_later, operator):
    client.force_login(operator)
    html = client.get(reverse("console:step", args=[decided_later.pk, "load"])).content.decode()
    took = {int(n): float(s) for n, s in re.findall(
        r'<tr data-attempt="(\d)">.*?<td data-field="took">([0-9.]+) s</td>', html, re.S)}
    assert set(took) == {1, 2, 3} and took[2] < 2
    wait = re.search(r'<tr class="wait" data-wait="escalation">.*?<td>([0-9.]+) s</td><td colspan="3">([^<]+)</td>',
                     html, re.S)
    assert float(wait.group(1)) >= 42 and wait.group(2) == "waiting for a decision on its failure"
    # in the order they happened: attempt 2, the escalation, the queue, attempt 3
    order = re.findall(r'<tr (?:data-attempt="(\d)"|class="wait" data-wait="([a-z-]+)")', html)
    assert [a or w for a, w in order].index("escalation") == [a or w for a, w in order].index("2") + 1


def test_the_gantts_first_picture_has_every_step_with_its_attempts_and_waits(client, decided_later, operator):
    client.force_login(operator)
    data = client.get(reverse("console:attempts", args=[decided_later.pk])).json()
    assert [s["id"] for s in data["steps"]] == ["fetch", "load", "report"]
    load = data["steps"][1]
    assert [(a["n"], a["status"]) for a in load["attempts"]] == [(1, "failed"), (2, "failed"), (3, "completed")]
    assert "escalation" in [w["kind"] for w in load["waits"]]
    assert data["last_event_id"] == RunEvent.objects.filter(run=decided_later).latest("id").pk
    assert data["status"] == "completed" and data["finished_at"] and data["now"]


def test_a_step_not_started_has_no_pieces(client, run, operator):
    client.force_login(operator)
    steps = {s["id"]: s for s in client.get(reverse("console:attempts", args=[run.pk])).json()["steps"]}
    assert steps["ship"]["attempts"] == [] and steps["ship"]["waits"] == [] and steps["ship"]["status"] == "pending"
    assert [w["kind"] for w in steps["sign_off"]["waits"]] == ["approval"]
    assert steps["sign_off"]["waits"][0]["end"] is None  # still waiting


def log(client, run, **query):
    return client.get(reverse("console:run_log", args=[run.pk]), query)


def test_the_log_has_every_steps_events_errors_decisions_and_output(client, decided_later, operator):
    client.force_login(operator)
    entries = log(client, decided_later).json()["entries"]
    texts = [(e["level"], e["step"], e["kind"], e["text"]) for e in entries]
    assert ("warning", "fetch", "step", "pending · attempt 1 · backoff before retrying · agent_error: "
            "connection reset") in texts
    assert any(level == "error" and step == "load" and "escalation" not in text and "ValueError: disk full" in text
               for level, step, kind, text in texts)
    assert any(kind == "approval" and text == "Retry chosen by april" for _, _, kind, text in texts)
    assert ("info", "report", "stdout", "rows: 3\nall good") in texts
    assert ("info", "", "run", "run completed") in texts
    ids = [e["id"] for e in entries]
    assert ids == sorted(ids)


def test_the_log_filters_by_level_step_and_text(client, decided_later, operator):
    client.force_login(operator)
    errors = log(client, decided_later, level="error").json()["entries"]
    assert errors and {e["level"] for e in errors} == {"error"}
    warnings = log(client, decided_later, level="warning").json()["entries"]
    assert {e["level"] for e in warnings} == {"warning", "error"} and len(warnings) > len(errors)
    fetch = log(client, decided_later, step="fetch").json()["entries"]
    assert fetch and {e["step"] for e in fetch} == {"fetch"}
    found = log(client, decided_later, q="CONNECTION reset").json()["entries"]
    assert found and all("connection reset" in e["text"] for e in found)
    assert log(client, decided_later, q="nothing says this").json()["entries"] == []


def test_the_log_comes_in_pages_and_continues_after_the_last_event_read(client, decided_later, operator):
    client.force_login(operator)
    whole = log(client, decided_later).json()
    assert whole["next_after"] is None
    seen, after = [], None
    while True:
        page = log(client, decided_later, limit=5, **({"after": after} if after else {})).json()
        seen += page["entries"]
        after = page["next_after"]
        if after is None:
            break
    assert seen == whole["entries"]
    assert log(client, decided_later, after=whole["last_event_id"]).json()["entries"] == []


def test_the_log_downloads_as_text_and_as_json_lines(client, decided_later, operator):
    client.force_login(operator)
    text = log(client, decided_later, format="text", step="load")
    assert text.status_code == 200 and text["Content-Type"].startswith("text/plain")
    assert text["Content-Disposition"] == f'attachment; filename="run-{decided_later.pk}-load.log"'
    body = text.content.decode()
    assert "ValueError: disk full" in body and " fetch " not in body
    assert re.search(r"^\S+ ERROR +load +step: failed · attempt 3|^\S+ ERROR +load +step: waiting", body, re.M)
    lines = log(client, decided_later, format="jsonl", level="error")
    assert lines["Content-Disposition"] == f'attachment; filename="run-{decided_later.pk}.jsonl"'
    rows = [json.loads(line) for line in lines.content.decode().splitlines()]
    assert rows and {r["level"] for r in rows} == {"error"}


@pytest.mark.parametrize("query, says", [
    ({"level": "debug"}, "level must be one of info, warning, error"),
    ({"level": "<script>"}, "level must be one of"),
    ({"format": "xml"}, "format must be one of json, text, jsonl"),
    ({"step": "nosuch"}, "has no step named 'nosuch'"),
    ({"step": "x" * 65}, "step must be at most 64 characters"),
    ({"q": "q" * 201}, "q must be at most 200 characters"),
    ({"after": "-1"}, "after must be a whole number"),
    ({"after": "0"}, "after must be a whole number"),
    ({"after": "1e3"}, "after must be a whole number"),
    ({"after": "٣"}, "after must be a whole number"),
    ({"after": str(2**64)}, "after must be a whole number"),
    ({"limit": "0"}, "limit must be a whole number"),
    ({"limit": "2001"}, "limit must be at most 2000"),
    ({"limit": "20001", "format": "text"}, "limit must be at most 20000"),
    ({"limit": "ten"}, "limit must be a whole number"),
])
def test_a_bad_log_parameter_is_refused_in_words(client, run, operator, query, says):
    client.force_login(operator)
    answer = log(client, run, **query)
    assert answer.status_code == 400 and says in answer.json()["error"]


@pytest.mark.parametrize("query", [{"limit": "1"}, {"limit": "2000"}, {"limit": "20000", "format": "jsonl"},
                                   {"after": "1"}, {"after": str(2**63 - 1)}, {"q": "q" * 200},
                                   {"step": "sign_off", "level": "warning", "format": "text"}])
def test_a_log_parameter_at_its_bounds_is_taken(client, run, operator, query):
    client.force_login(operator)
    assert log(client, run, **query).status_code == 200


def test_the_panes_are_for_those_who_may_see_the_run(client, run, outsider):
    client.force_login(outsider)
    assert client.get(reverse("console:attempts", args=[run.pk])).status_code == 403
    assert log(client, run).status_code == 403
    assert log(client, run, format="text").status_code == 403
    client.logout()
    assert client.get(reverse("console:attempts", args=[run.pk])).status_code == 302


FAILS = """
name: fails
steps:
  - {id: load, agent: mock, command: load, mock: {fail_times: 9, error: disk full}}
  - {id: report, agent: mock, command: report, depends_on: [load]}
"""


def test_a_step_that_never_ran_is_no_error_of_its_own(client, save_workflow, operator):
    run = fast_forward(services.run_start(user=operator, version=save_workflow(FAILS)))
    client.force_login(operator)
    steps = {s["id"]: s for s in client.get(reverse("console:attempts", args=[run.pk])).json()["steps"]}
    assert steps["report"]["never_ran"] and steps["report"]["word"] == "not run: upstream failed"
    assert steps["report"]["attempts"] == [] and not steps["load"]["never_ran"]
    errors = log(client, run, level="error").json()["entries"]
    assert {e["step"] for e in errors} == {"load", ""}  # the step that failed, and the run
    report = log(client, run, step="report").json()["entries"]
    assert [(e["level"], e["text"]) for e in report][-1] == ("warning", "not run: upstream failed")


def at(second: int):
    return timezone.now().replace(microsecond=0) + timedelta(seconds=second)


def test_a_held_or_blocked_dispatch_is_a_wait_and_the_attempt_starts_when_it_really_runs():
    """The engine's own sequences (engine/interpreter/machine.py): a hold waits for a person and dispatches the same
    attempt again; a retryable block backs off and does the same."""
    held = fold("x", [
        ("step", {"status": "running", "attempt": 1}, at(1)),
        ("governance", {"attempt": 1, "outcome": "hold", "gate": "approval_required"}, at(1)),
        ("step", {"status": "waiting", "attempt": 1, "wait": "hold"}, at(1)),
        ("step", {"status": "pending", "attempt": 1, "wait": "redispatch"}, at(61)),
        ("step", {"status": "running", "attempt": 1}, at(62)),
        ("step", {"status": "completed", "attempt": 1}, at(64)),
    ])
    assert [(a.number, a.status, a.seconds) for a in held.attempts] == [(1, "completed", 2.0)]
    assert [(w.kind, w.seconds) for w in held.waits] == [("hold", 60.0), ("queue", 1.0)]
    blocked = fold("y", [
        ("step", {"status": "running", "attempt": 1}, at(1)),
        ("governance", {"attempt": 1, "outcome": "block", "gate": "rate_limit"}, at(1)),
        ("step", {"status": "pending", "attempt": 1, "wait": "gate_retry", "error": "slow down"}, at(1)),
        ("step", {"status": "pending", "attempt": 1, "wait": "redispatch"}, at(6)),
        ("step", {"status": "running", "attempt": 1}, at(6)),
        ("step", {"status": "pending", "attempt": 1, "wait": "retry", "error": "boom"}, at(7)),
        ("step", {"status": "pending", "attempt": 1, "wait": "queued"}, at(9)),
        ("step", {"status": "running", "attempt": 2}, at(9)),
    ])
    assert [(a.number, a.status, a.seconds) for a in blocked.attempts] == [(1, "failed", 1.0), (2, "running", None)]
    assert [(w.kind, w.after, w.seconds) for w in blocked.waits] == [
        ("backoff", 1, 5.0), ("queue", 1, 0.0), ("backoff", 1, 2.0), ("queue", 1, 0.0)]


@pytest.mark.parametrize("gap_us, shown", [(0, False), (999, False), (1000, True), (20_000, True)])
def test_the_step_panel_shows_a_wait_only_when_it_lasted(client, decided_later, operator, gap_us, shown):
    """fetch's second attempt waited in the queue after its backoff: a queue that had a slot at once (under 1 ms
    as measured) is no row of "0.000 s in the queue"; from 1 ms it is a row."""
    events = list(RunEvent.objects.filter(run=decided_later, step="fetch", kind="step").order_by("id"))
    queued = [e for e in events if e.data.get("wait") == "queued"][-1]  # the wait before attempt 2
    running = next(e for e in events if e.id > queued.id and e.data.get("status") == "running")
    RunEvent.objects.filter(pk=queued.pk).update(at=running.at - timedelta(microseconds=gap_us))
    client.force_login(operator)
    html = client.get(reverse("console:step", args=[decided_later.pk, "fetch"])).content.decode()
    assert ('data-wait="queue"' in html) is shown
    assert 'data-wait="backoff"' in html  # the backoff before it lasted: it stays
    order = re.findall(r'<tr (?:data-attempt="(\d)"|class="wait" data-wait="([a-z-]+)")', html)
    rows = [a or w for a, w in order]
    assert rows[rows.index("1"):] == ["1", "backoff", *(["queue"] if shown else []), "2"]
