"""Firing due schedules: what the runtime's clock calls (seed 004's scheduled dispatch).

Each due time is decided in one transaction that locks its schedule, claims the due time with a
ScheduleFire row (unique per schedule and due time, so two clusters never both fire it), runs the guard
clauses in order and either starts the run or records why not. The next due time is always the first
cron time after both now and the due time: a cluster that was down, a pause or the kill switch never
produce a burst of catch-up runs.
"""

from __future__ import annotations

import logging
from collections import Counter
from datetime import datetime

from django.core.exceptions import PermissionDenied
from django.db import IntegrityError, connection, transaction
from django.db.models import Q
from django.utils import timezone

from forge.audit import codes
from forge.audit.services import audit
from forge.runs import services as runs
from forge.runs.models import Run
from forge.schedules.guards import BEFORE_OVERLAP, Attempt, Refusal, owner_may_start
from forge.schedules.holds import approvers_words, start_hold
from forge.schedules.models import Dispatch, KillSwitch, Schedule, ScheduleFire
from forge.schedules.selectors import IN_FLIGHT, runs_in_flight
from forge.schedules.timing import next_fire

log = logging.getLogger(__name__)
BATCH = 100
ALREADY_FIRED = "already_fired"  # another cluster claimed the due time: nothing to record here


def _due(now: datetime) -> Q:
    busy = ScheduleFire.objects.filter(run__status__in=IN_FLIGHT).values("schedule_id")
    waiting = Q(queued_due_at__isnull=False) & ~Q(pk__in=busy)
    return Q(enabled=True) & (Q(next_fire_at__lte=now) | waiting)


def due_schedules_exist(now: datetime | None = None) -> bool:
    """Whether `fire_due_schedules(now)` has anything to do: a due time has come, or a queued one can start.
    One indexed query, for the clock's every tick."""
    return Schedule.objects.filter(_due(now or timezone.now())).exists()


def fire_due_schedules(now: datetime | None = None) -> dict[str, int]:
    """Decide every due time that has come by `now` (default: the clock's now); how many ended how.

    Returns counts by outcome: a Dispatch status, or `already_fired` when another cluster had claimed it.
    At most BATCH schedules are looked at; the rest are still due at the next tick.
    """
    now = now or timezone.now()
    counts: Counter[str] = Counter()
    for pk in Schedule.objects.filter(_due(now)).order_by("next_fire_at", "pk").values_list("pk", flat=True)[:BATCH]:
        for decide in (_start_queued, _fire):
            try:
                outcome = decide(pk, now)
            except Exception:  # noqa: BLE001 - one schedule's fault must not stop the others; the next tick retries
                log.exception("firing schedule %s failed", pk)
                outcome = "error"
            if outcome:
                counts[outcome] += 1
    return dict(counts)


def _lock(pk: int, condition: Q) -> Schedule | None:
    # The kill switch's row first (the order kill_switch_set takes them in): an admin who engages it waits for
    # a decision under way, and is then told the truth: no schedule starts a run after that.
    if connection.features.has_select_for_update:
        list(KillSwitch.objects.select_for_update(no_key=True).filter(pk=KillSwitch.ONLY).values_list("pk"))
    # Checked again under the lock: another cluster may have fired it, or someone paused it, meanwhile.
    return (Schedule.objects.select_for_update(of=("self",)).select_related("workflow", "owner")
            .filter(condition, pk=pk, enabled=True).first())


def _fire(pk: int, now: datetime) -> str | None:
    with transaction.atomic():
        schedule = _lock(pk, Q(next_fire_at__lte=now))
        if schedule is None:
            return None
        due = schedule.next_fire_at
        schedule.next_fire_at = next_fire(schedule.cron, schedule.timezone, max(now, due), fired=due)
        try:
            with transaction.atomic():
                fire = ScheduleFire.objects.create(schedule=schedule, due_at=due, status="", at=now)
        except IntegrityError:
            schedule.save(update_fields=["next_fire_at"])
            return ALREADY_FIRED
        outcome = _decide(schedule, fire, Attempt(schedule, now), overlap=True)
        schedule.save()
        return outcome


def _start_queued(pk: int, now: datetime) -> str | None:
    """queue_one: start the due time that waited for the schedule's run in flight, once it has ended."""
    with transaction.atomic():
        schedule = _lock(pk, Q(queued_due_at__isnull=False))
        if schedule is None or runs_in_flight(schedule).exists():
            return None
        fire, _ = ScheduleFire.objects.get_or_create(schedule=schedule, due_at=schedule.queued_due_at,
                                                     defaults={"status": "", "at": now})
        schedule.queued_due_at = None
        outcome = _decide(schedule, fire, Attempt(schedule, now), overlap=False)
        schedule.save()
        return outcome


def _decide(schedule: Schedule, fire: ScheduleFire, attempt: Attempt, *, overlap: bool) -> str:
    """Run the guards in order and record the first refusal, or start the run."""
    for guard in BEFORE_OVERLAP:
        if refusal := guard(attempt):
            return _record(schedule, fire, attempt.now, refusal)
    in_flight = list(runs_in_flight(schedule)) if overlap else []
    if in_flight:
        ids = ", ".join(str(run.pk) for run in in_flight)
        still = f"run {ids} it started {'is' if len(in_flight) == 1 else 'are'} still in flight"
        if schedule.overlap == Schedule.SKIP:
            return _record(schedule, fire, attempt.now, Refusal(Dispatch.OVERLAP, f"{still} (overlap: skip)"))
        if schedule.overlap == Schedule.QUEUE_ONE:
            if schedule.queued_due_at is not None:
                return _record(schedule, fire, attempt.now, Refusal(
                    Dispatch.OVERLAP, f"{still} and the due time {schedule.queued_due_at:%Y-%m-%d %H:%M} UTC "
                                      f"already waits for it (overlap: queue_one)"))
            schedule.queued_due_at = fire.due_at
            return _record(schedule, fire, attempt.now, Refusal(
                Dispatch.QUEUED, f"{still}; this due time starts when it ends (overlap: queue_one)"))
    cancelling = in_flight if schedule.overlap == Schedule.CANCEL_RUNNING else []
    if refusal := owner_may_start(attempt, cancelling=bool(cancelling)):
        return _record(schedule, fire, attempt.now, refusal)
    try:
        with transaction.atomic():  # a start refused after all takes the cancellations back with it
            for run in cancelling:
                _cancel(schedule, run)
            run = runs.run_start(user=schedule.owner, version=attempt.version, args=schedule.args,
                                 hold=start_hold(schedule, fire.due_at))
    except runs.ServiceError as exc:
        return _record(schedule, fire, attempt.now, Refusal(Dispatch.VALIDATION_FAILED, str(exc)))
    except PermissionDenied as exc:
        return _record(schedule, fire, attempt.now, Refusal(Dispatch.NOT_PERMITTED, str(exc)))
    cancelled = f" after cancelling run {', '.join(str(r.pk) for r in cancelling)}" if cancelling else ""
    held = (f", held before its first step for approval by {approvers_words(schedule.approvers)}"
            if schedule.require_approval else "")
    return _record(schedule, fire, attempt.now, None, run=run,
                   message=f"started run {run.pk} of {attempt.version}{cancelled}{held}")


def _cancel(schedule: Schedule, run: Run) -> None:
    try:
        runs.run_cancel(user=schedule.owner, run=run,
                        reason=f"schedule {schedule.pk} is starting a new run (overlap: cancel_running)")
    except runs.ServiceError:
        pass  # it ended, or its cancellation was already asked for: either way it is on its way out


def _record(schedule: Schedule, fire: ScheduleFire, now: datetime, refusal: Refusal | None, *,
            run: Run | None = None, message: str = "") -> str:
    """Write the outcome on the fire record and the schedule, and audit it."""
    status, message = (refusal.status, refusal.message) if refusal else (Dispatch.DISPATCHED, message)
    fire.status, fire.message, fire.run, fire.at = status, message, run, now
    fire.save(update_fields=["status", "message", "run", "at"])
    schedule.last_dispatch_status, schedule.last_dispatch_at, schedule.last_dispatch_detail = status, now, message
    if run is not None:
        schedule.last_run = run
    code = {Dispatch.DISPATCHED: codes.SCHEDULE_DISPATCHED, Dispatch.QUEUED: codes.SCHEDULE_QUEUED}.get(
        status, codes.SCHEDULE_REFUSED)
    audit(code, run_id=run.pk if run else None, target=f"schedule:{schedule.pk}",
          detail={"status": status, "message": message, "workflow": schedule.workflow.name,
                  "due_at": fire.due_at.isoformat()})
    return status
