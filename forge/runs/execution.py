"""`execute_step`: one worker runs one step attempt under a lease, then records its result.

django-q2 may deliver the same task twice, or hand it to a new worker after
the first died. So a worker first claims the attempt: the claim fails if the
attempt was superseded (its fence changed) or a live worker holds its lease.
Taking over from a dead worker counts as a restart of the run, recorded
before the step runs again, and hands out a new fence so that anything the
dead worker might still report is stale.
"""

from __future__ import annotations

import os
import socket
import threading
from dataclasses import dataclass

from django.conf import settings
from django.db import connection, transaction
from django.utils import timezone

from engine.executors import StepRequest
from engine.interpreter.state import StepStatus
from forge.governance.context import configuration
from forge.runs import agents, bridge, recovery, store
from forge.runs.completion import Completion
from forge.runs.dispatching import completion_key, lease_until, request_of
from forge.runs.models import Run, StepResult
from forge.runs.runtime import advance

WORKER = f"{socket.gethostname()}:{os.getpid()}"


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
        if store.input_exists(run_id, completion_key(step, attempt, row["iteration"])):
            return None  # its result is recorded and waits to be fed: running it again would repeat it
        alive = row["lease_expires_at"] is not None and row["lease_expires_at"] > now
        if (row["executing"] or resume) and alive:
            return None
        if row["executing"] or resume:
            # The worker that held this attempt died: resume, counted before the step runs again.
            run.restart_count += 1
            run.fences += 1
            store.update(Run, {"restart_count": run.restart_count, "fences": run.fences}, id=run.pk)
            if not recovery.resumed(run, key=f"resume:{run.pk}:{step}:{attempt}:{fence}", step=step, attempt=attempt,
                                    previous_owner=row["lease_owner"]):
                return None
            fence = run.fences
        store.update(StepResult, {"executing": True, "lease_owner": WORKER, "fence": fence,
                                  "lease_expires_at": lease_until(now)}, id=row["id"])
        agent = configuration().agents.get(row["agent"])
        spec = bridge.workflow_of(run).by_id[step].model
    request = request_of(run_id, row["dispatch"], spec, workdir(run_id))
    return Claim(run_id, step, attempt, row["iteration"], fence, row["id"], agent, request)


class Heartbeat(threading.Thread):
    """Renews the lease while the step runs; a changed fence (cancel, timeout, takeover) stops the step."""

    def __init__(self, claim: Claim, cancel: threading.Event):
        super().__init__(daemon=True, name=f"heartbeat {claim.run_id}/{claim.step}")
        self.claim, self.cancel = claim, cancel
        self.done = threading.Event()
        self.every = min(1.0, settings.FORGE_LEASE_S / 3)

    def run(self) -> None:
        try:
            while not self.done.wait(self.every):
                renewed = StepResult.objects.filter(pk=self.claim.row_id, fence=self.claim.fence,
                                                    status=StepStatus.RUNNING).update(
                    lease_expires_at=lease_until(timezone.now()))
                if not renewed:
                    self.cancel.set()
                    return
        finally:
            connection.close()

    def stop(self) -> None:
        self.done.set()
        self.join(timeout=5)


def execute_step(run_id: int, step: str, attempt: int, fence: int, resume: bool = False) -> str:
    """The django-q2 task: claim, run, record, advance. Returns what happened, for the task log."""
    claim = claim_attempt(run_id, step, attempt, fence, resume=resume)
    if claim is None:
        return "not claimed"
    cancel = threading.Event()
    beat = Heartbeat(claim, cancel)
    beat.start()
    try:
        result = agents.execute(claim.agent, claim.request, cancel)
    finally:
        beat.stop()
    if result.deferred:
        # A gateway took it and will call back; the attempt is held until its deadline.
        StepResult.objects.filter(pk=claim.row_id, fence=claim.fence).update(
            executing=False, lease_owner=recovery.GATEWAY)
        return "deferred"
    outcome = advance(run_id, Completion(run_id, step, attempt, claim.iteration, result, fence=claim.fence))
    return outcome.value
