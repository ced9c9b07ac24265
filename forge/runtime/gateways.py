"""An http step's gateways while it runs (spec 15): failover, connection retries, measured health, cancels.

Routing (engine.governance.routing) writes into the step row's dispatch the
covering gateways in the order to try them. The worker sends the attempt to
the first; one that cannot be connected to (nothing was sent) is counted
against its health and the next is tried at once. When every one refused,
the attempt waits FORGE_GATEWAY_RETRY_S[n] and is tried again, on the
runtime's clock, never by sleeping in a worker: the row is handed to nobody
(lease owner `retry`) until its lease's end, when the clock queues it again
(`wake_due_retries`). After the last retry the attempt fails with
`gateway_unreachable`. The step's timeout still bounds all of it.

Each contact of a gateway is a RunEvent of kind `gateway`: `{"attempt",
"iteration", "gateway", "outcome", "reason"}`, outcome `answered`,
`accepted` (202), `unreachable`, `retry`, `cancel_sent` or `cancel_failed`.
The gateway that took the attempt is kept in the route (`gateway`): its
callback token is the one accepted, and its `cancel_url` is told when the
attempt is cancelled or times out, by the round that ends it, or by the
worker when that happened while its POST was in flight (`tell_if_ended`).
"""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass
from datetime import timedelta

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from engine.executors import StepResult
from engine.executors.httpcall import Reply, post_json
from engine.interpreter.state import StepStatus
from forge import live
from forge.audit import codes
from forge.audit.models import AuditEvent
from forge.governance import health
from forge.governance.models import Gateway
from forge.runs.models import Run, RunEvent, StepResult as StepRow
from forge.runs.pinning import pinned_agent
from forge.runtime import agents, leases, queue, store
from forge.runtime.dispatch import ROUTE

log = logging.getLogger(__name__)

UNREACHABLE = "gateway_unreachable"
# Results that say nothing of whether the gateway can be reached: the call ended on our side, or was never made.
_UNMEASURED = {"egress_refused", "cancelled", "timeout"}
CANCEL_TIMEOUT_S = 10.0
WAKE_BATCH = 100


@dataclass(frozen=True)
class Retry:
    """Every covering gateway refused the connection; the attempt is tried again at `due` (retry `number`)."""

    number: int
    due: object
    reason: str


def contact(attempt: int, iteration: int, gateway: str, outcome: str, reason: str) -> dict:
    return {"attempt": attempt, "iteration": iteration, "gateway": gateway, "outcome": outcome, "reason": reason}


def log_contacts(run_id: int, step: str, contacts: list[dict]) -> None:
    """The contacts as RunEvents, written under the run's lock as a round writes its events (the live view reads
    a run's events in id order)."""
    if not contacts:
        return
    now = timezone.now()
    with transaction.atomic():
        store.lock_run(run_id)
        RunEvent.objects.bulk_create([RunEvent(run_id=run_id, kind="gateway", step=step, data=data, at=now)
                                      for data in contacts])
        transaction.on_commit(lambda: live.wake(run_id))


def execute(claim, cancel: threading.Event, watch=None) -> StepResult | Retry:
    """Send the claimed attempt to its route's gateways in order until one answers (see the module's docstring)."""
    route = claim.route
    names = [name for name in route.get("gateways", []) if isinstance(name, str)]
    rows = {g.name: g for g in Gateway.objects.filter(name__in=names)}
    tries = int(route.get("retries", 0))
    if (refused_now := agents.refusal(claim.agent, claim.request)) is not None:
        return refused_now  # the step's own fault: no gateway is contacted, none is measured
    contacts, refused = [], []
    for name in names:
        gateway = rows.get(name)
        if gateway is None:
            reason = f"gateway {name!r} was deleted since the step was dispatched"
            contacts.append(contact(claim.attempt, claim.iteration, name, "unreachable", reason))
            refused.append(reason)
            continue
        try:
            executor = agents.executor_for(claim.agent, watch, gateway)
        except agents.AgentMisconfigured as exc:  # nothing is sent: the agent's fault, not the gateway's
            log_contacts(claim.run_id, claim.step, contacts)
            return StepResult.failure(str(exc))
        result = agents.call(claim.agent, executor, claim.request, cancel)
        if cancel.is_set() or result.error_code == "cancelled":
            log_contacts(claim.run_id, claim.step, contacts)  # cancelled, or the cluster stops: nothing measured
            tell_if_ended(claim, name)  # the POST was abandoned in flight: the gateway may have taken it all the same
            return result
        if result.error_code == UNREACHABLE:
            health.failed(gateway.pk, result.error or "could not connect")
            contacts.append(contact(claim.attempt, claim.iteration, name, "unreachable", result.error or ""))
            refused.append(result.error or f"could not connect to {name!r}")
            continue
        if result.error_code not in _UNMEASURED:
            health.reached(gateway.pk)
        if result.error_code == "timeout":
            outcome, said = "unreachable", f"no answer within the step's timeout: {result.error}"
        elif result.deferred:
            outcome, said = "accepted", "took the attempt (202) and will call back"
        else:
            outcome, said = "answered", "answered" + (f" ({result.error_code})" if not result.ok else "")
        contacts.append(contact(claim.attempt, claim.iteration, name, outcome, said))
        if route.get("gateway") != name:
            _keep_route(claim, {**route, "gateway": name})
        log_contacts(claim.run_id, claim.step, contacts)
        return result
    return _after_refusals(claim, names, tries, contacts, refused)


def _after_refusals(claim, names: list[str], tries: int, contacts: list[dict], refused: list[str]) -> StepResult | Retry:
    """Every gateway of the route refused: a retry on the clock while FORGE_GATEWAY_RETRY_S has one left, then the
    attempt's failure."""
    delays = settings.FORGE_GATEWAY_RETRY_S
    if tries < len(delays):
        due = timezone.now() + timedelta(seconds=delays[tries])
        log_contacts(claim.run_id, claim.step, contacts)
        return Retry(tries + 1, due, f"every covering gateway refused the connection; try {tries + 2} at "
                                     f"{due:%H:%M:%S} (retry {tries + 1} of {len(delays)})")
    log_contacts(claim.run_id, claim.step, contacts)
    last = refused[-1] if refused else "the route names no gateway"
    return StepResult.failure(f"no gateway covering the step could be reached ({', '.join(names) or 'none'}), "
                              f"after {len(delays)} retries: {last}"[:500], UNREACHABLE)


def _keep_route(claim, route: dict) -> None:
    """The route as the attempt now stands (the gateway that took it, the retries made), in the step's row."""
    row = StepRow.objects.filter(pk=claim.row_id, fence=claim.fence).values_list("dispatch", flat=True).first()
    if row is not None:
        StepRow.objects.filter(pk=claim.row_id, fence=claim.fence).update(dispatch={**row, ROUTE: route})
    claim.route = route


def schedule_retry(claim, retry: Retry) -> None:
    """Hand the attempt to the clock until `retry.due` (the worker has released its lease)."""
    route = {**claim.route, "retries": retry.number}
    _keep_route(claim, route)
    leases.retry_at(claim.row_id, claim.fence, retry.due)
    log_contacts(claim.run_id, claim.step, [contact(claim.attempt, claim.iteration, route.get("gateway") or "",
                                                    "retry", retry.reason)])


def wake_due_retries(broker=None) -> int:
    """The clock's part: queue every attempt whose retry time has come (one conditional update each, so one
    cluster queues it)."""
    now = timezone.now()
    due = (StepRow.objects.filter(lease_owner=leases.Owner.RETRY, lease_expires_at__lte=now).order_by()
           .values_list("pk", "run_id", "step", "attempt", "fence")[:WAKE_BATCH])
    woken = 0
    for pk, run_id, step, attempt, fence in due:
        if leases.retry_due(pk, fence, now):
            queue.enqueue_execution(run_id, step, attempt, fence, broker=broker)
            woken += 1
    return woken


# -- cancels ------------------------------------------------------------------------------------------------------

def cancel_taken(effects, command) -> None:
    """A round cancels an attempt (a person's cancel, its timeout, the run's end): if a gateway took it (202) and
    has a cancel_url, it is told once the round commits (a task, so no round waits on a gateway)."""
    row = (StepRow.objects.filter(run_id=effects.run.pk, step=command.step, lease_owner=leases.Owner.GATEWAY)
           .values_list("agent", "iteration", "dispatch").first())
    if row is not None:
        agent, iteration, dispatch = row
        queue_cancel(effects.run.pk, command.step, command.attempt, iteration, agent, dispatch, command.reason,
                     later=effects.on_commit)


def tell_if_ended(claim, gateway: str) -> bool:
    """The worker's POST of its attempt to `gateway` came back (a 202 it could no longer record) or was abandoned
    because the attempt is no longer its own. When the attempt ended meanwhile (cancelled, timed out, its run
    ended), the round that ended it saw a worker holding it, not a gateway, and told nobody: the gateway, which may
    have taken it, is told here. Not when another worker took the attempt over: it is still running and is sent
    again under the same run, step, attempt and iteration, which a cancel would stop too; nor when the cluster
    stops (the attempt is handed back). True when a cancel was queued."""
    row = StepRow.objects.filter(pk=claim.row_id).values("status", "attempt", "iteration", "lease_owner",
                                                          "error_code").first()
    if row is not None and row["status"] == StepStatus.RUNNING and row["lease_owner"] != leases.Owner.INBOX \
            and (row["attempt"], row["iteration"]) == (claim.attempt, claim.iteration):
        return False  # still running: taken over, or this cluster stops
    cancelled = (AuditEvent.objects.filter(run_id=claim.run_id, step=claim.step, attempt=claim.attempt,
                                           code=codes.STEP_CANCELLED).values_list("detail", flat=True).last())
    reason = (cancelled or {}).get("reason") if isinstance(cancelled, dict) else None
    if not reason and row is not None and row["attempt"] == claim.attempt:
        reason = row["error_code"]
    return _queue_tell(claim.run_id, claim.step, claim.attempt, claim.iteration, getattr(claim.agent, "name", ""),
                       gateway, str(reason or "cancelled"))


def queue_cancel(run_id: int, step: str, attempt: int, iteration: int, agent: str, dispatch: dict | None,
                 reason: str, *, later=None) -> None:
    """Queue the task that tells the gateway which took this attempt (its route's `gateway`), if it has a
    cancel_url; `later` defers the queueing (a round's on_commit)."""
    gateway = ((dispatch or {}).get(ROUTE) or {}).get("gateway")
    if gateway and (dispatch or {}).get("attempt") == attempt:
        _queue_tell(run_id, step, attempt, iteration, agent, gateway, reason, later=later)


def _queue_tell(run_id: int, step: str, attempt: int, iteration: int, agent: str, gateway: str, reason: str, *,
                later=None) -> bool:
    if not gateway or not Gateway.objects.filter(name=gateway).exclude(cancel_url="").exists():
        return False
    args = (run_id, step, attempt, iteration, agent, gateway, reason)

    def send() -> None:
        queue.enqueue(queue.CANCEL_AT_GATEWAY, *args, task_name=f"cancel run {run_id} {step}#{attempt} at {gateway}")

    (later or (lambda callback: callback()))(send)
    return True


def tell_cancel(run_id: int, step: str, attempt: int, iteration: int, agent_name: str, gateway_name: str,
                reason: str) -> str:
    """POST the cancel to the gateway's cancel_url, authenticated as the dispatch was; the run's log says how it
    went. Returns what happened, for the task log."""
    gateway = Gateway.objects.filter(name=gateway_name).exclude(cancel_url="").first()
    run = Run.objects.filter(pk=run_id).first()
    if gateway is None or run is None:
        return "nothing to tell"
    agent = pinned_agent(run, agent_name)
    try:
        headers = agents.auth_headers(agent) if agent is not None else {}
    except agents.AgentMisconfigured as exc:
        headers, failure = {}, str(exc)
    else:
        failure = None
    if failure is None:
        reply = post_json(gateway.cancel_url, {"run_id": str(run_id), "step": step, "attempt": attempt,
                                               "iteration": iteration, "reason": reason},
                          headers=headers, timeout_s=CANCEL_TIMEOUT_S, cancel=threading.Event(),
                          egress_allow=settings.FORGE_EGRESS_ALLOW)
        if isinstance(reply, Reply) and 200 <= reply.status < 300:
            outcome, said = "cancel_sent", f"told the gateway the attempt ended ({reason})"
        else:
            outcome = "cancel_failed"
            said = (f"the gateway answered HTTP {reply.status} to the cancel" if isinstance(reply, Reply)
                    else f"the cancel could not be sent: {reply.error}")
    else:
        outcome, said = "cancel_failed", f"the cancel could not be sent: {failure}"
    log_contacts(run_id, step, [contact(attempt, iteration, gateway_name, outcome, said)])
    return outcome
