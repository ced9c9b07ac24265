"""Recovery: the step-timeout enforcer, the watchdog, the reaper and the crash-loop breaker.

They run as one periodic task (`recover`) on every cluster. Each is safe to
run twice at once: the enforcer's results are idempotent, the watchdog
counts a restart only where its conditional update wins, and the reaper
only enqueues a resume that `claim_attempt` may refuse.
"""

from __future__ import annotations

import logging
from datetime import timedelta

from django.conf import settings
from django.db import transaction
from django.db.models import F
from django.utils import timezone

from engine.executors import StepResult as Result
from engine.interpreter.state import RunStatus, StepStatus
from forge.audit.services import audit
from forge.runs import store
from forge.runs.models import Approval, Run, RunEvent, RunInput, StepResult

log = logging.getLogger(__name__)

GATEWAY = "gateway"      # lease_owner of an attempt a gateway accepted (202) and will call back about
INBOX = "inbox"          # lease_owner of an attempt whose result already waits in the run's inbox
TIMEOUT_GRACE_S = 5
STUCK_S = 30
BATCH = 100


def recover() -> dict[str, int]:
    now = timezone.now()
    return {"timed_out": enforce_timeouts(now), "resumed": watchdog(now), "reaped": reap(now)}


def enforce_timeouts(now) -> int:
    """Steps still running past their deadline (a lost callback, a stuck worker) end as timed out."""
    from forge.runs.completion import Completion, Outcome, complete_step
    from forge.runs.tasks import enqueue_advance

    late = (StepResult.objects.filter(status=StepStatus.RUNNING, deadline_at__lt=now - timedelta(seconds=TIMEOUT_GRACE_S),
                                      run__status=RunStatus.RUNNING)
            .exclude(lease_owner=INBOX).values_list("run_id", "step", "attempt", "iteration", "fence", "dispatch")[:BATCH])
    count = 0
    for run_id, step, attempt, iteration, fence, dispatch in late:
        seconds = (dispatch or {}).get("timeout_s", 0)
        result = Result.failure(f"timed out after {seconds:g} s (no result arrived)", "timeout")
        if complete_step(Completion(run_id, step, attempt, iteration, result, fence=fence),
                         source="timeout_enforcer") is Outcome.ACCEPTED:
            count += 1
            enqueue_advance(run_id)
    return count


def watchdog(now) -> int:
    """Runs whose due events have waited too long lost their advance: count a restart and advance them."""
    from forge.runs.tasks import enqueue_advance

    cutoff = now - timedelta(seconds=STUCK_S)
    stuck = (RunInput.objects.filter(processed_at=None, due_at__lt=cutoff,
                                     run__status__in=(RunStatus.PENDING, RunStatus.RUNNING))
             .values_list("run_id", flat=True).distinct()[:BATCH])
    count = 0
    for run_id in stuck:
        with transaction.atomic():
            # Only one watchdog wins this update, so a restart is counted once; the row stays locked.
            won = Run.objects.filter(pk=run_id, progressed_at__lt=cutoff).update(
                restart_count=F("restart_count") + 1, progressed_at=now)
            if not won:
                continue
            run = store.lock_run(run_id)
            if not resumed(run, key=f"watchdog:{run_id}:{run.restart_count}", by="watchdog"):
                continue
        count += 1
        enqueue_advance(run_id)
    return count


def reap(now) -> int:
    """Attempts whose worker stopped renewing the lease are handed to a new worker."""
    from forge.runs.agents import enqueue_execution

    dead = (StepResult.objects.filter(status=StepStatus.RUNNING, lease_expires_at__lt=now,
                                      run__status=RunStatus.RUNNING)
            .exclude(lease_owner__in=(GATEWAY, INBOX)).values_list("run_id", "step", "attempt", "fence")[:BATCH])
    count = 0
    for run_id, step, attempt, fence in dead:
        enqueue_execution(run_id, step, attempt, fence, resume=True)
        count += 1
    return count


def resumed(run: Run, *, key: str, step: str = "", attempt: int | None = None, **detail) -> bool:
    """Audit a resume already counted in `run.restart_count` (the caller holds the run's lock). Past
    FORGE_MAX_RESTARTS the run fails for good (crash_loop), and False says it must not go on."""
    audit("forge.run.resumed", run_id=run.pk, step=step, attempt=attempt,
          detail={"restart_count": run.restart_count, **detail}, key=key)
    if run.restart_count > settings.FORGE_MAX_RESTARTS:
        fail_crash_loop(run)
        return False
    return True


def fail_crash_loop(run: Run) -> None:
    """Past the restart limit the run fails for good (the caller holds the run's lock)."""
    now = timezone.now()
    message = (f"the run was resumed {run.restart_count} times after crashes, more than the limit of "
               f"{settings.FORGE_MAX_RESTARTS}; it is stopped so it cannot crash the cluster again")
    run.status, run.error, run.error_code, run.finished_at = RunStatus.FAILED, message, "crash_loop", now
    run.wake_at = None
    run.save(update_fields=["status", "error", "error_code", "finished_at", "wake_at"])
    StepResult.objects.filter(run=run, status=StepStatus.RUNNING).update(
        status=StepStatus.FAILED, error=message, error_code="crash_loop", finished_at=now, executing=False,
        lease_expires_at=None, updated_at=now)
    StepResult.objects.filter(run=run, status__in=(StepStatus.PENDING, StepStatus.WAITING)).update(
        status=StepStatus.CANCELLED, error="the run failed (crash_loop)", error_code="run_halted", updated_at=now)
    Approval.objects.filter(run=run, status=Approval.PENDING).update(status=Approval.EXPIRED, decided_at=now)
    RunEvent(run=run, kind="run", data={"status": RunStatus.FAILED, "error": message, "error_code": "crash_loop"},
             at=now).save()
    audit("forge.run.failed", run_id=run.pk, detail={"error_code": "crash_loop", "error": message},
          key=f"crash_loop:{run.pk}")
    if run.parent_id:
        from forge.runs.children import report_finished

        report_finished(run)
