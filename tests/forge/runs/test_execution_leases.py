"""Leases and fences of `execute_step`: redelivered tasks, dead workers, stale and repeated results.

The steps use a python agent that is not run inline, so each attempt goes
through the queue; `enqueue_execution` is patched to capture the task
instead of running it, and the test plays the worker. Time is virtual
(`clock`, tests/forge/runs/conftest.py): a worker's death is its lease
running out.
"""

import threading
from unittest import mock

import pytest
from django.utils import timezone

from engine.executors import StepResult as Result
from forge.audit.models import AuditEvent
from forge.governance.models import Agent, TokenEvent
from forge.runs import services
from forge.runtime import agents, leases, recovery, stopping
from forge.runtime.completion import Completion, Outcome, complete_step
from forge.runtime.execution import claim_attempt, execute_step
from forge.runs.models import RunInput, StepResult
from forge.runtime.rounds import advance

pytestmark = pytest.mark.django_db(transaction=True, serialized_rollback=True)

CALLS = []


def metered(call):
    """A python step that reports usage, and counts how often it really ran."""
    CALLS.append((call.step, call.attempt))
    return Result(ok=True, outputs={"n": len(CALLS)}, stdout="ran", tokens=42, cost=0.5)


QUEUED = """
name: queued_python
steps:
  - id: work
    agent: worker_py
    command: tests.forge.runs.test_execution_leases.metered
  - id: after
    agent: worker_py
    command: forge.runs.callables.noop
    depends_on: [work]
"""


@pytest.fixture
def queued(clock, operator, save_workflow, settings):
    """A started run whose `work` step waits in the queue; yields (run, enqueue mock)."""
    settings.FORGE_PYTHON_CALLABLES = ["tests.forge.runs.test_execution_leases.metered",
                                       "forge.runs.callables.noop"]
    agents._python_callables.cache_clear()
    CALLS.clear()
    Agent.objects.create(name="worker_py", provider="python", config={"inline": False})
    with mock.patch("forge.runtime.queue.enqueue_execution") as enqueue:
        run = services.run_start(user=operator, version=save_workflow(QUEUED))
        yield run, enqueue
    agents._python_callables.cache_clear()


def task(enqueue, index=0):
    """The (run_id, step, attempt, fence) of the index-th captured execute_step task."""
    return enqueue.call_args_list[index].args


def row(run, step="work"):
    return StepResult.objects.get(run=run, step=step)


def expire(clock, settings):
    """The worker holding the lease died: no renewal, and the lease runs out."""
    clock.advance(settings.FORGE_LEASE_S + 1)


def test_a_dispatched_step_is_queued_with_its_fence_and_a_lease(queued):
    run, enqueue = queued
    run_id, step, attempt, fence = task(enqueue)
    assert (run_id, step, attempt) == (run.pk, "work", 1)
    work = row(run)
    assert (work.status, work.fence, work.executing, work.agent) == ("running", fence, False, "worker_py")
    assert work.lease_expires_at > timezone.now()


def test_a_redelivered_task_for_a_completed_attempt_does_nothing(queued):
    run, enqueue = queued
    assert execute_step(*task(enqueue)) == "accepted"
    assert row(run).status == "completed"
    assert len(enqueue.call_args_list) == 2  # `after` was queued next
    audits, spent = AuditEvent.objects.count(), TokenEvent.objects.count()
    assert spent == 1
    assert execute_step(*task(enqueue)) == "not claimed"
    assert execute_step(*task(enqueue), True) == "not claimed"
    assert CALLS == [("work", 1)]
    assert (AuditEvent.objects.count(), TokenEvent.objects.count()) == (audits, spent)
    assert RunInput.objects.filter(run=run, key="done:work:1:0").count() == 1


def test_a_claim_while_the_lease_is_alive_is_refused(queued):
    run, enqueue = queued
    claim = claim_attempt(*task(enqueue))
    assert claim is not None and claim.fence == task(enqueue)[3]
    assert (row(run).executing, row(run).lease_owner) == (True, leases.worker())
    assert claim_attempt(*task(enqueue)) is None
    assert claim_attempt(*task(enqueue), resume=True) is None
    run.refresh_from_db()
    assert run.restart_count == 0
    assert row(run).fence == claim.fence


@pytest.mark.parametrize("resume", [False, True], ids=["redelivered", "reaped"])
def test_a_claim_after_the_lease_expired_resumes_with_a_new_fence(queued, clock, settings, resume):
    run, enqueue = queued
    first = claim_attempt(*task(enqueue))
    expire(clock, settings)
    second = claim_attempt(*task(enqueue), resume=resume)
    assert second is not None
    assert second.fence != first.fence
    run.refresh_from_db()
    assert run.restart_count == 1
    work = row(run)
    assert (work.fence, work.executing, work.status) == (second.fence, True, "running")
    assert work.lease_expires_at > timezone.now()
    resumed = AuditEvent.objects.get(code="forge.run.resumed", run_id=run.pk)
    assert (resumed.step, resumed.attempt) == ("work", 1)
    assert resumed.detail == {"restart_count": 1, "by": "reaper" if resume else "redelivery",
                              "previous_owner": leases.worker()}
    taken = AuditEvent.objects.get(code="forge.step.resumed", run_id=run.pk)
    assert (taken.step, taken.attempt, taken.detail["previous_owner"], taken.detail["crashed"]) == (
        "work", 1, leases.worker(), True)


def test_the_fourth_resume_fails_the_run_with_crash_loop(queued, clock, settings):
    assert settings.FORGE_MAX_RESTARTS == 3
    run, enqueue = queued
    run_id, step, attempt, fence = task(enqueue)
    claim_attempt(run_id, step, attempt, fence)
    for _ in range(3):
        expire(clock, settings)
        claim = claim_attempt(run_id, step, attempt, fence, resume=True)
        assert claim is not None
        fence = claim.fence
    expire(clock, settings)
    assert claim_attempt(run_id, step, attempt, fence, resume=True) is None
    run.refresh_from_db()
    assert (run.status, run.error_code, run.restart_count) == ("failed", "crash_loop", 4)
    assert (row(run).status, row(run).error_code, row(run).executing) == ("failed", "crash_loop", False)
    assert (row(run, "after").status, row(run, "after").error_code) == ("cancelled", "run_halted")
    assert AuditEvent.objects.filter(code="forge.run.resumed", run_id=run.pk).count() == 4
    failed = AuditEvent.objects.get(code="forge.run.failed", run_id=run.pk)
    assert failed.detail["error_code"] == "crash_loop"
    assert execute_step(run_id, step, attempt, fence) == "not claimed"
    assert CALLS == []


def test_a_result_carrying_an_old_fence_is_discarded(queued, clock, settings):
    run, enqueue = queued
    old = claim_attempt(*task(enqueue))
    expire(clock, settings)
    new = claim_attempt(*task(enqueue), resume=True)
    late = Completion(run.pk, "work", 1, 0, Result(ok=True, outputs={"n": 0}, tokens=7, cost=0.1),
                      fence=old.fence)
    assert complete_step(late) is Outcome.STALE
    assert complete_step(late) is Outcome.STALE
    stale = AuditEvent.objects.get(code="forge.step.stale_result_discarded", run_id=run.pk)
    assert (stale.detail["fence"], stale.detail["current_fence"]) == (old.fence, new.fence)
    assert not RunInput.objects.filter(run=run, key__startswith="done:work").exists()
    assert row(run).status == "running"
    assert list(TokenEvent.objects.values_list("tokens", "cost")) == [(7, 0.1)]  # the call's cost is kept
    fresh = Completion(run.pk, "work", 1, 0, Result(ok=True, outputs={"n": 1}), fence=new.fence)
    assert complete_step(fresh) is Outcome.ACCEPTED


def test_completing_an_attempt_twice_is_deduplicated(queued):
    run, enqueue = queued
    claim = claim_attempt(*task(enqueue))
    done = Completion(run.pk, "work", 1, 0, Result(ok=True, outputs={"n": 1}), fence=claim.fence)
    assert complete_step(done) is Outcome.ACCEPTED
    assert complete_step(done) is Outcome.DUPLICATE
    assert RunInput.objects.filter(run=run, key="done:work:1:0").count() == 1
    advance(run.pk)
    assert complete_step(done) is Outcome.DUPLICATE
    assert (row(run).status, row(run).outputs) == ("completed", {"n": 1})


def test_a_redelivered_task_after_the_result_was_recorded_does_not_run_the_step_again(queued):
    run, enqueue = queued
    claim = claim_attempt(*task(enqueue))
    result = agents.execute(claim.agent, claim.request, threading.Event())
    assert CALLS == [("work", 1)]
    # The worker recorded its result, then died before advancing the run; django-q delivers the task again.
    assert complete_step(Completion(run.pk, "work", 1, 0, result, fence=claim.fence)) is Outcome.ACCEPTED
    assert execute_step(*task(enqueue)) == "not claimed"
    assert CALLS == [("work", 1)]


def test_a_step_whose_agent_was_deleted_after_dispatch_runs_as_pinned_and_the_next_dispatch_is_refused(queued):
    # The run pinned the agent when it started (spec 15): the attempt dispatched before the deletion runs with
    # that configuration; a new dispatch meets the gates, which read the agent live and find it gone.
    run, enqueue = queued
    Agent.objects.filter(name="worker_py").delete()

    assert execute_step(*task(enqueue)) == "accepted"

    assert CALLS == [("work", 1)]
    assert (row(run).status, row(run).outputs) == ("completed", {"n": 1})
    after = row(run, "after")
    assert (after.status, after.error_code) == ("failed", "agent_disabled")
    assert "not registered" in after.error


# -- a stopping cluster (forge.runtime.stopping) ------------------------------------------------------------

@pytest.fixture
def sentinel(monkeypatch):
    """This process belongs to a cluster whose Sentinel shares the stopping flag (unset); reset afterwards."""
    monkeypatch.setattr(stopping, "_flag", None)
    stopping.share()


def the_stop_comes_and(result):
    """An agent call during which the cluster starts stopping, which then returns `result`."""
    def execute(agent, request, cancel, watch=None):
        stopping.request()
        return result
    return mock.patch("forge.runtime.agents.execute", execute)


def test_a_worker_of_a_stopping_cluster_leaves_a_queued_attempt_for_the_next_start(queued, sentinel):
    run, enqueue = queued
    stopping.request()

    assert execute_step(*task(enqueue)) == "not claimed: the cluster is stopping"

    assert CALLS == []
    assert (row(run).status, row(run).executing, row(run).lease_owner) == ("running", False, "")


def test_a_step_the_stop_cancelled_is_handed_back_and_the_next_start_runs_it_without_counting_a_crash(
        queued, sentinel, clock, monkeypatch):
    run, enqueue = queued
    with the_stop_comes_and(Result.failure("cancelled; the process was killed", "cancelled")):
        assert execute_step(*task(enqueue)) == "handed back: the cluster is stopping"
    work = row(run)
    assert (work.status, work.executing, work.lease_owner, work.error) == ("running", False, "", None)

    monkeypatch.setattr(stopping, "_flag", None)  # the next start's workers
    clock.advance(1)
    assert recovery.reap(timezone.now()) == 1
    resent = enqueue.call_args_list[-1]
    assert execute_step(*resent.args, **resent.kwargs) == "accepted"

    run.refresh_from_db()
    assert (row(run).status, run.restart_count, CALLS) == ("completed", 0, [("work", 1)])
    assert AuditEvent.objects.get(code="forge.step.resumed", run_id=run.pk).detail["crashed"] is False
    assert not AuditEvent.objects.filter(code="forge.run.resumed", run_id=run.pk).exists()


def test_a_step_that_succeeds_as_the_cluster_stops_is_recorded(queued, sentinel):
    run, enqueue = queued
    with the_stop_comes_and(Result(ok=True, outputs={"n": 7}, stdout="done")):
        assert execute_step(*task(enqueue)) == "accepted"
    assert (row(run).status, row(run).outputs) == ("completed", {"n": 7})


def test_a_stopping_cluster_cancels_the_queued_step_a_worker_runs_but_not_its_inline_calls(queued, sentinel):
    run, enqueue = queued
    fence = claim_attempt(*task(enqueue)).fence
    queued_step = leases.Lease(run.pk, "work", fence, stops_with_cluster=True)
    inline_call = leases.Lease(run.pk, "work", fence)
    probe = leases.Lease(run.pk, "work", fence + 100)  # no such fence: the next renewal cancels it
    leases.hold([queued_step, inline_call])
    try:
        stopping.request()
        assert queued_step.cancel.wait(30)
        leases.hold([probe])
        assert probe.cancel.wait(30)  # a whole renewal since the stop was seen, the inline call's lease in it
        assert not inline_call.cancel.is_set()
    finally:
        leases.release([queued_step, inline_call, probe])
