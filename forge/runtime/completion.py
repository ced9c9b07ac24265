"""Recording a step attempt's result, from a worker or a gateway callback: once, and only if still wanted."""

from __future__ import annotations

import enum
from dataclasses import dataclass

from django.db import transaction
from django.utils import timezone

from engine.executors import StepResult as Result
from engine.interpreter.state import StepStatus
from forge.audit import codes
from forge.audit.services import audit
from forge.governance import reservations
from forge.runs.models import Run, RunInput
from forge.runtime import inbox, leases, store


class Outcome(enum.Enum):
    ACCEPTED = "accepted"          # fed to the run next
    DUPLICATE = "deduplicated"     # this attempt's result was already recorded
    STALE = "stale"                # the attempt was superseded (cancelled, timed out, re-executed)
    RUN_ENDED = "run_ended"        # the run is over; only the cost is kept


@dataclass(frozen=True)
class Completion:
    run_id: int
    step: str
    attempt: int
    iteration: int
    result: Result
    fence: int | None = None  # None: from a gateway, which does not know fences


def complete_step(completion: Completion, *, source: str = "worker") -> Outcome:
    """Record one result. The caller advances the run when the outcome is ACCEPTED."""
    with transaction.atomic():
        run = store.lock_run(completion.run_id)
        outcome = record_completion(run, completion, source=source)
        if outcome is Outcome.ACCEPTED:
            leases.result_recorded(run.pk, completion.step)
    return outcome


def record_completion(run: Run, completion: Completion, *, source: str = "worker") -> Outcome:
    """Record one result in the run's inbox, or say why not (the caller holds the run's lock)."""
    c = completion
    key = inbox.completion(c.step, c.attempt, c.iteration)
    row = store.step_row(run.pk, c.step, "status", "attempt", "iteration", "fence", "agent")
    if row is None:
        raise LookupError(f"run {run.pk} has no step {c.step!r}")
    now = timezone.now()

    def spend() -> None:  # what the agent spent counts even when its result is not wanted
        reservations.settle(run_id=run.pk, workflow=run.workflow.name, agent=row["agent"], step=c.step,
                            attempt=c.attempt, iteration=c.iteration, tokens=c.result.tokens, cost=c.result.cost,
                            at=now, input_tokens=c.result.input_tokens, output_tokens=c.result.output_tokens,
                            model=c.result.model or "")

    if store.input_exists(run.pk, key):
        spend()
        return Outcome.DUPLICATE
    detail = {"source": source, "ok": c.result.ok, "error_code": c.result.error_code}
    if run.finished:
        spend()
        audit(codes.STEP_RESULT_AFTER_END, run_id=run.pk, step=c.step, attempt=c.attempt, detail=detail,
              key=f"late:{run.pk}:{key}")
        return Outcome.RUN_ENDED
    current = row["status"] == StepStatus.RUNNING and row["attempt"] == c.attempt and row["iteration"] == c.iteration
    if not current or (c.fence is not None and c.fence != row["fence"]):
        spend()
        audit(codes.STEP_STALE_RESULT_DISCARDED, run_id=run.pk, step=c.step, attempt=c.attempt,
              detail={**detail, "fence": c.fence, "current_fence": row["fence"], "status": row["status"]},
              key=f"stale:{run.pk}:{key}:{c.fence}")
        return Outcome.STALE
    event = c.result.event(_Call(c.step, c.attempt, c.iteration), now.timestamp())
    # The run's lock and the check above make the key new; the lease ends when the round writes the step.
    store.insert([RunInput(run=run, key=key, event=event.to_json(), due_at=now, created_at=now)])
    return Outcome.ACCEPTED


@dataclass(frozen=True)
class _Call:
    """The three fields StepResult.event reads from a request."""

    step: str
    attempt: int
    iteration: int

