"""One crash counts one restart of a run, however many of its steps it interrupted; inline python calls are
held by their worker while they run, and each lease names the process that holds it.

Queued steps are captured (`enqueue_execution` is patched) and the test plays
the workers: a claim is a worker taking the step, and a worker's death is its
lease running out on the virtual `clock` (tests/forge/runs/conftest.py).
"""

from __future__ import annotations

import multiprocessing
import os
import socket
import time
from datetime import timedelta
from unittest import mock

import pytest
from django.db import connections
from django.utils import timezone

from engine.executors import StepResult as Result
from forge.audit.models import AuditEvent
from forge.governance.models import Agent
from forge.runs import services
from forge.runtime import agents, recovery
from forge.runtime.completion import Completion, complete_step
from forge.runtime.execution import claim_attempt, execute_step
from forge.runs.models import Run, StepResult
from forge.runtime.rounds import advance

pytestmark = pytest.mark.django_db(transaction=True, serialized_rollback=True)

CALLS: list[str] = []
SEEN: dict = {}
CALLABLES = [f"tests.forge.runs.test_crash_accounting.{name}" for name in ("counted", "outlives_its_lease",
                                                                          "dies_once", "overstays")]


def counted(call):
    CALLS.append(call.step)
    return {"ran": call.step}


def outlives_its_lease(call):
    """Runs until the lease it was dispatched with has run out, then looks at what recovery makes of it."""
    CALLS.append(call.step)
    row = StepResult.objects.get(run_id=int(call.run_id), step=call.step)
    outlived = row.lease_expires_at + timedelta(seconds=0.5)
    deadline = time.monotonic() + 30
    while timezone.now() < outlived and time.monotonic() < deadline:
        time.sleep(0.05)
    now = timezone.now()
    SEEN["reaped"] = recovery.reap(now)
    row.refresh_from_db()
    SEEN.update(owner=row.lease_owner, executing=row.executing, held=row.lease_expires_at > now)
    return {"ok": True}


def overstays(call):
    """Still running well past its deadline, when the timeout enforcer looks."""
    CALLS.append(call.step)
    with mock.patch("forge.runtime.queue.enqueue_advance"):
        later = timezone.now() + timedelta(seconds=1 + recovery.TIMEOUT_GRACE_S + 1)
        SEEN["timed_out"] = recovery.enforce_timeouts(later)
    return {"ok": True}


class WorkerDied(BaseException):
    """Stands for the advancing worker dying in the middle of an inline call."""


def dies_once(call):
    CALLS.append(call.step)
    if CALLS.count(call.step) == 1:
        raise WorkerDied
    return {"ok": True}


PARALLEL = """
name: parallel_queued
steps:
  - {id: a, agent: worker_py, command: tests.forge.runs.test_crash_accounting.counted}
  - {id: b, agent: worker_py, command: tests.forge.runs.test_crash_accounting.counted}
  - {id: c, agent: worker_py, command: tests.forge.runs.test_crash_accounting.counted}
  - {id: join, agent: mock, command: done, depends_on: [a, b, c]}
"""


@pytest.fixture(autouse=True)
def callables(settings):
    settings.FORGE_PYTHON_CALLABLES = CALLABLES
    agents._python_callables.cache_clear()
    CALLS.clear()
    SEEN.clear()
    yield
    agents._python_callables.cache_clear()


@pytest.fixture
def parallel(clock, operator, save_workflow):
    """A started run whose steps a, b and c wait in the queue; yields (run, their tasks, enqueue mock)."""
    Agent.objects.create(name="worker_py", provider="python", config={"inline": False})
    with mock.patch("forge.runtime.queue.enqueue_execution") as enqueue:
        run = services.run_start(user=operator, version=save_workflow(PARALLEL))
        tasks = {args[1]: args for args in (c.args for c in enqueue.call_args_list)}
        assert sorted(tasks) == ["a", "b", "c"]
        yield run, tasks, enqueue


def crash(clock, settings):
    """Every worker holding a lease dies at once: none renews, and the leases run out."""
    clock.advance(max(settings.FORGE_LEASE_S, recovery.STUCK_S) + 1)


def restarts(run) -> int:
    return Run.objects.get(pk=run.pk).restart_count


def test_one_crash_of_three_running_steps_counts_one_restart(parallel, clock, settings):
    run, tasks, _ = parallel
    for step in "abc":
        assert claim_attempt(*tasks[step]) is not None
    crash(clock, settings)

    for step in "abc":
        assert execute_step(*tasks[step], True) == "accepted"

    run.refresh_from_db()
    assert (run.status, run.restart_count) == ("completed", 1)
    assert sorted(CALLS) == ["a", "b", "c"]
    resumed = AuditEvent.objects.filter(run_id=run.pk, code="forge.run.resumed")
    assert [e.detail["restart_count"] for e in resumed] == [1]


def test_a_crash_after_the_resumed_steps_started_counts_again(parallel, clock, settings):
    run, tasks, _ = parallel
    fences = {}
    for step in "abc":
        fences[step] = claim_attempt(*tasks[step]).fence
    crash(clock, settings)
    for step in "abc":
        fences[step] = claim_attempt(run.pk, step, 1, fences[step], resume=True).fence
    assert restarts(run) == 1
    crash(clock, settings)

    for step in "abc":
        assert claim_attempt(run.pk, step, 1, fences[step], resume=True) is not None

    assert restarts(run) == 2
    assert AuditEvent.objects.filter(run_id=run.pk, code="forge.run.resumed").count() == 2


def test_a_task_lost_before_any_worker_took_it_is_sent_again_without_counting_a_crash(parallel, clock, settings):
    run, tasks, _ = parallel
    crash(clock, settings)  # the broker lost the tasks: no worker ever claimed them

    for step in "abc":
        assert execute_step(*tasks[step], True) == "accepted"

    run.refresh_from_db()
    assert (run.status, run.restart_count) == ("completed", 0)
    assert sorted(CALLS) == ["a", "b", "c"]
    assert not AuditEvent.objects.filter(run_id=run.pk, code="forge.run.resumed").exists()


@pytest.mark.parametrize("first", ["watchdog", "reaper"])
def test_a_crash_seen_by_both_the_watchdog_and_the_reaper_counts_once(parallel, clock, settings, first):
    run, tasks, enqueue = parallel
    claim_attempt(*tasks["a"])
    b = claim_attempt(*tasks["b"])
    c = claim_attempt(*tasks["c"])
    for claim in (b, c):  # their workers recorded their results, then died before advancing the run
        complete_step(Completion(run.pk, claim.step, 1, 0, Result(ok=True, outputs={}), fence=claim.fence))
    crash(clock, settings)  # ... in the crash that also killed a's worker

    resumed = []

    def reaper():  # a's attempt goes to a new worker, which is still running it when the other looks
        enqueue.reset_mock()
        assert recovery.reap(timezone.now()) == 1
        resumed.append(claim_attempt(*enqueue.call_args.args, **enqueue.call_args.kwargs))
        assert resumed[0] is not None

    def watchdog():  # b's and c's results, left unfed, are fed
        assert recovery.watchdog(timezone.now()) == 1

    for recover in (watchdog, reaper) if first == "watchdog" else (reaper, watchdog):
        recover()
    assert restarts(run) == 1
    complete_step(Completion(run.pk, "a", 1, 0, Result(ok=True, outputs={}), fence=resumed[0].fence))
    advance(run.pk)

    run.refresh_from_db()
    assert (run.status, run.restart_count) == ("completed", 1)


def test_an_inline_python_step_longer_than_its_lease_is_held_by_its_worker_and_runs_once(operator, save_workflow,
                                                                                          settings):
    settings.FORGE_LEASE_S = 2  # renewed every 2/3 s; the step runs past its first lease
    source = ("name: patient\nsteps:\n  - {id: slow, agent: python, "
              "command: tests.forge.runs.test_crash_accounting.outlives_its_lease}\n")
    with mock.patch("forge.runtime.queue.enqueue_execution") as enqueue:
        run = services.run_start(user=operator, version=save_workflow(source))

    assert SEEN["reaped"] == 0, "the reaper took the running inline step for a crashed one"
    enqueue.assert_not_called()
    assert SEEN["executing"] and SEEN["held"]
    assert SEEN["owner"].split(":")[:2] == [socket.gethostname()[:64], str(os.getpid())]
    run.refresh_from_db()
    assert (run.status, run.restart_count) == ("completed", 0)
    assert CALLS == ["slow"]


def test_an_inline_step_whose_worker_died_is_resumed_once_and_counted_once(clock, operator, save_workflow,
                                                                           settings):
    source = ("name: fragile\nsteps:\n  - {id: once, agent: python, "
              "command: tests.forge.runs.test_crash_accounting.dies_once}\n")
    with mock.patch("forge.runs.services.enqueue_advance"):
        run = services.run_start(user=operator, version=save_workflow(source))
    with pytest.raises(WorkerDied):
        advance(run.pk)
    crash(clock, settings)

    with mock.patch("forge.runtime.queue.enqueue_execution") as enqueue:
        assert recovery.reap(timezone.now()) == 1
    assert execute_step(*enqueue.call_args.args, **enqueue.call_args.kwargs) == "accepted"

    run.refresh_from_db()
    assert (run.status, run.restart_count) == ("completed", 1)
    assert CALLS == ["once", "once"]


def test_an_inline_step_past_its_deadline_is_still_ended_by_the_timeout_enforcer(operator, save_workflow):
    source = ("name: overdue\nsteps:\n  - {id: stuck, agent: python, timeout: 1, "
              "command: tests.forge.runs.test_crash_accounting.overstays}\n")
    run = services.run_start(user=operator, version=save_workflow(source))

    assert SEEN["timed_out"] == 1
    run.refresh_from_db()
    stuck = StepResult.objects.get(run=run, step="stuck")
    assert (run.status, stuck.status, stuck.error_code) == ("failed", "timed_out", "timeout")
    assert CALLS == ["stuck"]


def _claim_in_a_child(run_id: int, step: str, attempt: int, fence: int) -> None:
    claim_attempt(run_id, step, attempt, fence)


def test_each_worker_process_names_itself_in_the_leases_it_takes(parallel):
    """django-q2 forks its workers from a parent that imported Forge: each must still sign with its own name."""
    run, tasks, _ = parallel
    connections.close_all()  # a forked child must open its own connection
    children = {}
    for step in "ab":
        child = multiprocessing.get_context("fork").Process(target=_claim_in_a_child, args=tasks[step])
        child.start()
        child.join(60)
        assert child.exitcode == 0
        children[step] = child.pid

    owners = {row.step: row.lease_owner for row in StepResult.objects.filter(run=run, step__in="ab")}
    for step, pid in children.items():
        assert owners[step].split(":")[:2] == [socket.gethostname()[:64], str(pid)], owners
        assert len(owners[step].split(":")[2]) == 8, owners  # a nonce: a pid can be handed out again
    assert owners["a"] != owners["b"]
