"""`execute_step`: one worker runs one step attempt under a lease, then records its result.

django-q2 may deliver the same task twice, or hand it to a new worker after
the first died. So a worker first claims the attempt: the claim fails if the
attempt was superseded (its fence changed) or a live worker holds its lease.
Taking over from a dead worker hands out a new fence, so that anything the
dead worker might still report is stale, and counts the crash that killed
it, once for all the attempts it interrupted (see `recovery`), before the
step runs again. An attempt no worker had claimed yet (its task was lost)
is sent again without counting a crash: nothing of it ran.

When the cluster stops (forge.runtime.stopping), a worker takes no new
attempt and the one it runs is cancelled; unless it succeeded all the same,
it is handed back and the next start runs it again, with no crash counted:
the stop is not the step's failure.
"""

from __future__ import annotations

from dataclasses import dataclass

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from engine.executors import StepRequest
from engine.interpreter.state import StepStatus
from forge.audit import codes
from forge.audit.services import audit
from forge.runs import artifacts
from forge.runs.compiled import run_workflow
from forge.runs.models import Run
from forge.runs.pinning import pinned_agent
from forge.runtime import agents, bridge, gateways, inbox, leases, output, recovery, stopping, store
from forge.runtime.completion import Completion
from forge.runtime.dispatch import ROUTE, request_of
from forge.runtime.rounds import advance


@dataclass
class Claim:
    run_id: int
    step: str
    attempt: int
    iteration: int
    fence: int
    row_id: int
    agent: object
    request: StepRequest
    route: dict | None = None  # an http step's gateways, in the order to try them (forge.runtime.gateways)


def workdir(run_id: int) -> str:
    path = settings.FORGE_WORKDIR / f"run-{run_id}"
    path.mkdir(parents=True, exist_ok=True)
    return str(path)


def claim_attempt(run_id: int, step: str, attempt: int, fence: int, *, resume: bool = False) -> Claim | None:
    """Take the attempt for this worker, or None when it is not this task's to run."""
    now = timezone.now()
    with transaction.atomic():
        run = store.lock_run(run_id)
        row = store.step_row(run_id, step, "status", "attempt", "iteration", "fence", "executing", "lease_expires_at",
                             "lease_owner", "agent", "dispatch")
        if run.finished or row is None or row["status"] != StepStatus.RUNNING or row["attempt"] != attempt \
                or row["fence"] != fence:
            return None
        if store.input_exists(run_id, inbox.completion(step, attempt, row["iteration"])):
            return None  # its result is recorded and waits to be fed: running it again would repeat it
        alive = row["lease_expires_at"] is not None and row["lease_expires_at"] > now
        if (row["executing"] or resume) and alive:
            return None
        if row["executing"] or resume:
            if not _take_over(run, row, step, attempt, resume):
                return None
            fence = run.fences
        leases.claim(row["id"], fence, now)
        agent = pinned_agent(run, row["agent"])  # as the run started; deleted since: its pin still runs
        spec = run_workflow(run).by_id[step].model
    request = request_of(run_id, row["dispatch"], spec, workdir(run_id))
    route = (row["dispatch"] or {}).get(ROUTE) if getattr(agent, "provider", None) == "http" else None
    return Claim(run_id, step, attempt, row["iteration"], fence, row["id"], agent, request, route)


def _take_over(run: Run, row: dict, step: str, attempt: int, resume: bool) -> bool:
    """The attempt's worker died, or its task was lost: a new fence, and the crash counted (False: the run
    is stopped by the crash-loop breaker). The caller holds the run's lock."""
    previous = row["lease_owner"]
    crashed = row["executing"]  # a worker held it, so the step was running when its worker died
    lease = row["lease_expires_at"] or timezone.now()
    counted = crashed and recovery.count_crash(run, *recovery.lease_window(lease))
    run.fences += 1
    store.update(Run, recovery.crash_fields(run, "fences"), id=run.pk)
    audit(codes.STEP_RESUMED, run_id=run.pk, step=step, attempt=attempt,
          key=f"resume:{run.pk}:{step}:{attempt}:{row['fence']}",
          detail={"previous_owner": previous, "owner": leases.worker(), "crashed": crashed,
                  "restart_count": run.restart_count})
    return not counted or recovery.resumed(run, by="reaper" if resume else "redelivery", step=step,
                                           attempt=attempt, previous_owner=previous)


def execute_step(run_id: int, step: str, attempt: int, fence: int, resume: bool = False) -> str:
    """The django-q2 task: claim, run, record, advance. Returns what happened, for the task log."""
    if stopping.requested():
        return "not claimed: the cluster is stopping"  # still queued: the reaper sends it again when its lease ends
    claim = claim_attempt(run_id, step, attempt, fence, resume=resume)
    if claim is None:
        return "not claimed"
    lease = leases.Lease(run_id, step, claim.fence, stops_with_cluster=True)
    leases.hold([lease])
    try:
        watch = output.watcher(run_id, step, attempt)
        if claim.route:
            result = gateways.execute(claim, lease.cancel, watch)
        else:
            result = agents.execute(claim.agent, claim.request, lease.cancel, watch)
    finally:
        leases.release([lease])
    if isinstance(result, gateways.Retry):
        gateways.schedule_retry(claim, result)  # the clock sends it again: no worker waits
        return f"retry {result.number} at {result.due:%H:%M:%S}"
    if result.deferred:
        # A gateway took it and will call back; the attempt is held until its deadline.
        if not leases.deferred(claim.row_id, claim.fence) and claim.route:
            gateways.tell_if_ended(claim, claim.route.get("gateway") or "")  # it ended while the POST was in flight
        return "deferred"
    if not result.ok and stopping.requested():
        leases.handed_back(claim.row_id, claim.fence)
        return "handed back: the cluster is stopping"
    if claim.request.spec.artifacts:  # what the attempt left in the run's directory, kept before its result
        artifacts.keep(run_id=run_id, step=step, attempt=attempt, iteration=claim.iteration, fence=claim.fence,
                       patterns=claim.request.spec.artifacts, workdir=claim.request.workdir)
    outcome = advance(run_id, Completion(run_id, step, attempt, claim.iteration, result, fence=claim.fence))
    return outcome.value
