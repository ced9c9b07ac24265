"""Recovery: the step-timeout enforcer, the watchdog, the reaper and the crash-loop breaker.

They run as one periodic task (`recover`) on every cluster. Each is safe to
run twice at once: the enforcer's results are idempotent, the watchdog
re-checks a run under its lock, and the reaper only enqueues a resume that
`claim_attempt` may refuse.

One crash counts one restart of a run, however many of its steps it
interrupted. A crash is only seen through what it left behind: a lease that
ran out (its worker died after its last renewal and before the lease's end)
or inputs left unfed (the advance was lost after the run last progressed).
Each gives the window in which the crash happened; a crash whose window
overlaps the last counted one may be that same crash and is not counted
again. A worker that dies every time it runs a step is counted every time:
its next claim comes after its lease ran out, so the windows never overlap.
"""

from __future__ import annotations

import logging
from datetime import timedelta

from django.conf import settings
from django.db import transaction
from django.db.models import Exists, OuterRef
from django.utils import timezone

from engine.executors import StepResult as Result
from engine.interpreter import events as ev
from engine.interpreter.state import RunStatus, StepStatus
from forge.audit import codes
from forge.audit.services import audit
from forge.governance.models import TokenEvent
from forge.runs.models import Run, RunInput, StepResult
from forge.runtime import gateways, inbox, queue, store
from forge.runtime.completion import Completion, Outcome, complete_step
from forge.runtime.leases import Owner

log = logging.getLogger(__name__)

TIMEOUT_GRACE_S = 5
STUCK_S = 30
BATCH = 100


def recover() -> dict[str, int]:
    now = timezone.now()
    return {"timed_out": enforce_timeouts(now), "resumed": watchdog(now), "reaped": reap(now),
            "released": release_abandoned()}


def enforce_timeouts(now) -> int:
    """Steps still running past their deadline (a lost callback, a stuck worker) end as timed out."""
    late = (StepResult.objects.filter(status=StepStatus.RUNNING, deadline_at__lt=now - timedelta(seconds=TIMEOUT_GRACE_S),
                                      run__status=RunStatus.RUNNING)
            .exclude(lease_owner=Owner.INBOX).values_list("run_id", "step", "attempt", "iteration", "fence", "dispatch",
                                                          "lease_owner", "agent")[:BATCH])
    count = 0
    for run_id, step, attempt, iteration, fence, dispatch, owner, agent in late:
        seconds = (dispatch or {}).get("timeout_s", 0)
        result = Result.failure(f"timed out after {seconds:g} s (no result arrived)", "timeout")
        if complete_step(Completion(run_id, step, attempt, iteration, result, fence=fence),
                         source="timeout_enforcer") is Outcome.ACCEPTED:
            count += 1
            queue.enqueue_advance(run_id)
            if owner == Owner.GATEWAY:  # no CancelStep follows a result: the gateway that took it is told here
                gateways.queue_cancel(run_id, step, attempt, iteration, agent, dispatch, "timeout")
    return count


def watchdog(now) -> int:
    """Runs whose due events have waited too long lost their advance: count a restart and advance them."""
    cutoff = now - timedelta(seconds=STUCK_S)
    stuck = (RunInput.objects.filter(processed_at=None, due_at__lt=cutoff,
                                     run__status__in=(RunStatus.PENDING, RunStatus.RUNNING))
             .values_list("run_id", flat=True).distinct()[:BATCH])
    count = 0
    for run_id in stuck:
        with transaction.atomic():
            run = store.lock_run(run_id)
            if run.finished or run.progressed_at >= cutoff:
                continue  # another watchdog, or an advance, came first
            counted = count_crash(run, run.progressed_at, now)
            run.progressed_at = now
            store.update(Run, crash_fields(run, "progressed_at"), id=run.pk)
            if counted and not resumed(run, by="watchdog"):
                continue
        if not counted:
            log.info("run %s: advancing its overdue events; the crash that lost them is already counted", run_id)
        count += 1
        queue.enqueue_advance(run_id)
    return count


def reap(now) -> int:
    """Attempts whose worker stopped renewing the lease are handed to a new worker."""
    dead = (StepResult.objects.filter(status=StepStatus.RUNNING, lease_expires_at__lt=now,
                                      run__status=RunStatus.RUNNING)
            .exclude(lease_owner__in=(Owner.GATEWAY, Owner.INBOX, Owner.RETRY))
            .values_list("run_id", "step", "attempt", "fence")[:BATCH])
    count = 0
    for run_id, step, attempt, fence in dead:
        queue.enqueue_execution(run_id, step, attempt, fence, resume=True)
        count += 1
    return count


def release_abandoned() -> int:
    """Reservations whose attempt is no longer running stop holding budgets. Rounds release them as attempts
    end; this catches one they could not see (a budget removed while the call ran, a deleted run)."""
    running = StepResult.objects.filter(run_id=OuterRef("run_id"), step=OuterRef("step"), attempt=OuterRef("attempt"),
                                        iteration=OuterRef("iteration"), status=StepStatus.RUNNING)
    return TokenEvent.objects.filter(reserved__gt=0).exclude(Exists(running)).update(reserved=0.0)


def lease_window(lease_expires_at) -> tuple:
    """When the worker of a lease that ran out died: after its last renewal, before the lease's end."""
    return lease_expires_at - timedelta(seconds=settings.FORGE_LEASE_S), lease_expires_at


def count_crash(run: Run, after, before) -> bool:
    """Count the crash that happened between `after` and `before` in `run.restart_count`, unless the last
    counted crash may be this one (their windows overlap). The caller holds the run's lock and saves
    `crash_fields(run)`."""
    if run.crash_before is not None and after < run.crash_before and run.crash_after < before:
        return False
    run.restart_count += 1
    run.crash_after, run.crash_before = after, before
    return True


def crash_fields(run: Run, *names: str) -> dict:
    return {name: getattr(run, name) for name in ("restart_count", "crash_after", "crash_before", *names)}


def resumed(run: Run, *, by: str, step: str = "", attempt: int | None = None, **detail) -> bool:
    """Audit a crash just counted in `run.restart_count` (the caller holds the run's lock). Past
    FORGE_MAX_RESTARTS the run fails for good (crash_loop), and False says it must not go on."""
    audit(codes.RUN_RESUMED, run_id=run.pk, step=step, attempt=attempt,
          key=f"restart:{run.pk}:{run.restart_count}",
          detail={"restart_count": run.restart_count, "by": by, **detail})
    if run.restart_count > settings.FORGE_MAX_RESTARTS:
        fail_crash_loop(run)
        return False
    return True


def fail_crash_loop(run: Run) -> None:
    """Past the restart limit the run fails for good: its next round feeds RunAborted before anything else,
    and the interpreter ends it like any other run (the caller holds the run's lock)."""
    message = (f"the run was resumed {run.restart_count} times after crashes, more than the limit of "
               f"{settings.FORGE_MAX_RESTARTS}; it is stopped so it cannot crash the cluster again")
    now = timezone.now()
    event = ev.RunAborted("crash_loop", message, at=now.timestamp())
    # Due at the run's creation: fed first, before the inputs the crashes left behind.
    store.insert([RunInput(run_id=run.pk, key=inbox.ABORT, event=event.to_json(), due_at=run.created_at,
                           created_at=now)], ignore_conflicts=True)
    transaction.on_commit(lambda: queue.enqueue_advance(run.pk))
