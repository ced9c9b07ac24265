"""The crash-loop breaker stops a run through its interpreter: `forge status`, the step rows, the run's
events, its approvals and its child runs all say the same thing.

The queued step is captured (`enqueue_execution` is patched) and the test
plays its workers; each worker dies by letting its lease run out on the
virtual `clock`. The run starts one crash short of the limit.
"""

from __future__ import annotations

import io
import json
from unittest import mock

import pytest
from django.core.management import call_command

from forge.governance.models import Agent
from forge.runs import services
from forge.runs.models import Approval, Run, RunEvent, StepResult
from forge.runtime import agents, recovery
from forge.runtime.execution import claim_attempt

pytestmark = pytest.mark.django_db(transaction=True, serialized_rollback=True)

CHILD = """
name: waits_for_a_person
steps:
  - {id: ask, approval: required, approval_message: "go on?"}
"""

PARENT = """
name: crash_looping
steps:
  - {id: work, agent: worker_py, command: tests.forge.runs.test_crash_loop.never_called}
  - {id: delegate, workflow_ref: {name: waits_for_a_person}}
  - {id: after, agent: mock, command: x, depends_on: [work]}
"""


def never_called(call):
    raise AssertionError("the test plays the worker; nothing runs the step")


@pytest.fixture
def crash_looping(clock, operator, save_workflow, settings):
    settings.FORGE_PYTHON_CALLABLES = ["tests.forge.runs.test_crash_loop.never_called"]
    agents._python_callables.cache_clear()
    Agent.objects.create(name="worker_py", provider="python", config={"inline": False})
    save_workflow(CHILD)
    with mock.patch("forge.runtime.queue.enqueue_execution") as enqueue:
        run = services.run_start(user=operator, version=save_workflow(PARENT))
        (task,) = [c.args for c in enqueue.call_args_list]
        Run.objects.filter(pk=run.pk).update(restart_count=settings.FORGE_MAX_RESTARTS)
        assert claim_attempt(*task) is not None  # a worker takes the step ...
        clock.advance(settings.FORGE_LEASE_S + 1)  # ... and dies: its lease runs out
        assert claim_attempt(*task, resume=True) is None  # the crash past the limit stops the run instead
    yield Run.objects.get(pk=run.pk)
    agents._python_callables.cache_clear()


def status_json(run) -> dict:
    out = io.StringIO()
    call_command("forge", "status", str(run.pk), "--json", stdout=out)
    return json.loads(out.getvalue())


def test_a_crash_looped_run_fails_with_crash_loop_in_its_row_and_in_forge_status(crash_looping, settings):
    run = crash_looping
    assert (run.status, run.error_code, run.restart_count) == ("failed", "crash_loop", settings.FORGE_MAX_RESTARTS + 1)
    status = status_json(run)
    assert (status["status"], status["error"]) == ("failed", run.error)
    rows = {row.step: (row.status, row.error_code) for row in StepResult.objects.filter(run=run)}
    assert rows == {"work": ("failed", "crash_loop"), "delegate": ("failed", "crash_loop"),
                    "after": ("cancelled", "run_halted")}
    assert {step: (s["status"], s["error_code"]) for step, s in status["steps"].items()} == rows


def test_every_step_the_breaker_stopped_has_its_event_and_the_run_its_last(crash_looping):
    run = crash_looping
    events = list(RunEvent.objects.filter(run=run).order_by("id"))
    last_step_event = {e.step: e.data["status"] for e in events if e.kind == "step"}
    assert {s: last_step_event[s] for s in ("work", "delegate", "after")} == {
        "work": "failed", "delegate": "failed", "after": "cancelled"}
    assert (events[-1].kind, events[-1].data["status"], events[-1].data["error_code"]) == ("run", "failed",
                                                                                          "crash_loop")


def test_the_child_run_of_a_crash_looped_run_is_cancelled_and_its_approval_expires(crash_looping):
    child = Run.objects.get(parent=crash_looping)
    assert child.status == "cancelled"
    assert list(Approval.objects.filter(run=child).values_list("status", flat=True)) == [Approval.EXPIRED]


def test_the_stopped_step_leaves_no_lease_and_its_late_result_is_stale(crash_looping):
    work = StepResult.objects.get(run=crash_looping, step="work")
    assert (work.executing, work.lease_expires_at, work.lease_owner) == (False, None, "")
    assert recovery.reap(work.updated_at) == 0
