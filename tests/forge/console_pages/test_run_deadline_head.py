"""The run view's header counts down to the run's deadline (the document's `timeout`) while the run is live, says
when the deadline passed and the run is being stopped, and for a run the deadline ended says "stopped at its
deadline (timeout 10m)"; a run without a deadline, or one that ended before it, says nothing of it."""

import re
from datetime import timedelta

import pytest
from django.urls import reverse
from django.utils import timezone

from forge.console.run_head import left_text, timeout_text
from forge.runs import services
from forge.runs.models import Run, RunInput
from forge.runtime.rounds import advance
from tests.forge.conftest import fast_forward
from tests.forge.console_pages.test_run_head import head_of, text

pytestmark = pytest.mark.django_db

BOUNDED = """
name: bounded_flow
timeout: 10m
steps:
  - {id: prepare, agent: mock, command: prepare, mock: {outputs: {ready: true}}}
  - {id: sign_off, approval: required, approval_message: ship it?, depends_on: [prepare]}
"""
UNBOUNDED = BOUNDED.replace("timeout: 10m\n", "")


def until_waiting(run: Run) -> Run:
    """Feed only what is due now: the run waits for its approval, its deadline still ahead."""
    for _ in range(50):
        if not RunInput.objects.filter(run=run, processed_at=None, due_at__lte=timezone.now()).exists():
            break
        advance(run.pk)
    run.refresh_from_db()
    return run


@pytest.fixture
def live(save_workflow, operator):
    return until_waiting(services.run_start(user=operator, version=save_workflow(BOUNDED)))


def deadline_of(client, run) -> str:
    head = head_of(client, run)
    found = re.search(r'<span id="run-deadline".*?(?=<span id="live")', head, re.S)
    return text(found.group(0)) if found else ""


def test_a_live_run_counts_down_to_its_deadline(client, live, operator):
    due = timezone.now() + timedelta(minutes=4, seconds=12.4)
    Run.objects.filter(pk=live.pk).update(deadline_at=due)
    client.force_login(operator)
    assert live.status == "running"
    said = deadline_of(client, live)
    assert said.startswith("deadline in 4m 12s (at ") and said.endswith(" UTC, timeout 10m)"), said
    head = head_of(client, live)
    assert f'data-deadline="{due.isoformat()}"' in head and 'data-timeout="10m"' in head


def test_a_deadline_passed_while_the_run_is_being_stopped_says_so(client, live, operator):
    Run.objects.filter(pk=live.pk).update(deadline_at=timezone.now() - timedelta(seconds=2))
    client.force_login(operator)
    assert deadline_of(client, live).startswith("deadline passed: the run is being stopped")


def test_a_run_its_deadline_stopped_says_so(client, live, operator):
    ended = fast_forward(live)  # virtual time: the deadline comes before anyone approves
    assert (ended.status, ended.error_code) == ("failed", "run_timeout")
    client.force_login(operator)
    assert deadline_of(client, ended) == "stopped at its deadline (timeout 10m)"
    assert "data-deadline" not in head_of(client, ended)  # nothing counts down any more


def test_a_run_that_ended_before_its_deadline_says_nothing_of_it(client, live, operator):
    Run.objects.filter(pk=live.pk).update(deadline_at=timezone.now() + timedelta(minutes=5))
    services.run_cancel(user=operator, run=live)
    live = fast_forward(live)
    assert live.status == "cancelled"
    client.force_login(operator)
    assert deadline_of(client, live) == ""


def test_a_run_without_a_timeout_has_no_deadline(client, save_workflow, operator):
    run = fast_forward(services.run_start(user=operator, version=save_workflow(UNBOUNDED)))
    client.force_login(operator)
    assert deadline_of(client, run) == "" and "Deadline" not in head_of(client, run)


@pytest.mark.parametrize("seconds, said", [(252, "4m 12s"), (252.4, "4m 12s"), (9, "9s"), (60, "1m 0s"),
                                           (3605, "1h 0m 5s"), (7 * 86400, "168h 0m 0s"), (0.4, "passed"),
                                           (0, "passed"), (-30, "passed")])
def test_time_left_reads_as_the_countdowns_write_it(seconds, said):
    assert left_text(seconds) == said


@pytest.mark.parametrize("value, said", [("10m", "10m"), (" 2d ", "2d"), (600, "600s"), (90.5, "90.5s"),
                                         (None, "")])
def test_a_timeout_reads_as_its_author_wrote_it(value, said):
    assert timeout_text(value) == said
