"""Everything people do to schedules and the kill switch. Each checks permission, changes state and appends
an AuditEvent in one transaction; bad input raises ScheduleRejected and changes nothing."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from django.contrib.auth.models import Group
from django.db import transaction
from django.utils import timezone as django_timezone

from engine.arguments import ArgumentsInvalid, resolve_args
from engine.problems import WorkflowInvalid
from forge.accounts.roles import can
from forge.audit import codes
from forge.audit.services import audit
from forge.errors import Conflict, Forbidden, NotFound, TooLarge
from forge.runs.compiled import new_run_workflow
from forge.runs.creation import RunRefused, check_args_size
from forge.runs.services import ServiceError
from forge.schedules.models import Dispatch, KillSwitch, Schedule, ScheduleFire
from forge.schedules.timing import cron_problem, next_fire, zone
from forge.workflows.models import Workflow

POLICIES = tuple(value for value, _ in Schedule.OVERLAP_POLICIES)
MAX_APPROVERS = 20  # groups named as a schedule's approvers


class ScheduleRejected(ServiceError):
    """A schedule or kill switch change that cannot be made as asked; nothing changed. `field` names the
    input at fault, for a form to show the message beside it (and the API's problem, as `field`)."""

    def __init__(self, message: str, *, field: str | None = None, code: str = ""):
        super().__init__(message, code=code, **({"field": field} if field else {}))
        self.field = field


class ScheduleConflict(Conflict, ScheduleRejected):
    """The schedule or the kill switch is already as asked."""


class ScheduleNotFound(NotFound, ScheduleRejected):
    """No such schedule (deleted meanwhile, or never made)."""


class ScheduleTooLarge(TooLarge, ScheduleRejected):
    """The schedule's arguments are past the installation's bound."""


def _require(user, action: str, what: str) -> None:
    """`user` None is the system itself (the CLI on the server), which may do anything."""
    if user is not None and not can(user, action):
        raise Forbidden(f"you may not {what}")


def _target(schedule: Schedule) -> str:
    return f"schedule:{schedule.pk}"


def check_schedule(*, workflow: Workflow | str, cron: str, timezone: str, args: Any, overlap: str,
                   args_from_text: bool = False) -> tuple[Workflow, dict[str, Any]]:
    """The workflow and the arguments to keep, or ScheduleRejected saying which input is wrong and why.

    Arguments are checked against the `args` of the workflow's latest version; only those given are kept
    (coerced), so a later version's defaults still apply when the schedule fires.
    """
    if isinstance(workflow, str):
        found = Workflow.objects.filter(name=workflow).first()
        if found is None:
            raise ScheduleRejected(f"there is no workflow {workflow!r}; `forge workflows` lists them",
                                   field="workflow")
        workflow = found
    if problem := cron_problem(cron):
        raise ScheduleRejected(problem, field="cron")
    try:
        zone(timezone)
    except ValueError as exc:
        raise ScheduleRejected(str(exc), field="timezone") from None
    if overlap not in POLICIES:
        raise ScheduleRejected(f"overlap {overlap!r}: choose one of {', '.join(POLICIES)}", field="overlap")
    if not isinstance(args, dict):
        raise ScheduleRejected("the arguments must be a JSON object of name: value", field="args")
    version = workflow.latest_version()
    if version is None:
        raise ScheduleRejected(f"workflow {workflow.name!r} has no saved version", field="workflow")
    try:
        check_args_size(args)
        resolved = resolve_args(new_run_workflow(version)[0].document, args, from_text=args_from_text)
    except (RunRefused, ArgumentsInvalid) as exc:
        kind = ScheduleTooLarge if isinstance(exc, TooLarge) else ScheduleRejected
        raise kind(f"arguments for {version}: {exc}", field="args") from None
    except WorkflowInvalid as exc:
        raise ScheduleRejected(f"{version} is not valid: {exc}", field="workflow") from None
    return workflow, {name: resolved[name] for name in args}


def check_approvers(approvers: Any) -> list[str]:
    """The groups that may approve a held run's start, as kept (sorted, each once), or ScheduleRejected: each must
    be an existing group. Empty: Approvers (and Admins, who always may)."""
    if approvers is None:
        return []
    if isinstance(approvers, str) or not isinstance(approvers, (list, tuple)):
        raise ScheduleRejected("the approvers must be a list of group names", field="approvers")
    if not all(isinstance(name, str) for name in approvers):
        raise ScheduleRejected("each approver is a group's name", field="approvers")
    names = sorted({name.strip() for name in approvers})
    if "" in names:
        raise ScheduleRejected("an approver's group name cannot be empty", field="approvers")
    if len(names) > MAX_APPROVERS:
        raise ScheduleRejected(f"at most {MAX_APPROVERS} groups may approve a schedule's runs; {len(names)} were "
                               f"named", field="approvers")
    known = set(Group.objects.filter(name__in=names).values_list("name", flat=True))
    unknown = [name for name in names if name not in known]
    if unknown:
        groups = ", ".join(sorted(Group.objects.values_list("name", flat=True))) or "none"
        raise ScheduleRejected(f"there is no group {', '.join(repr(name[:150]) for name in unknown[:5])}; the "
                               f"groups are {groups}", field="approvers")
    return names


def _settings(schedule: Schedule) -> dict[str, Any]:
    return {"workflow": schedule.workflow.name, "cron": schedule.cron, "timezone": schedule.timezone,
            "args": schedule.args, "overlap": schedule.overlap, "enabled": schedule.enabled,
            "require_approval": schedule.require_approval, "approvers": schedule.approvers,
            "owner": schedule.owner.get_username() if schedule.owner else None}


def schedule_add(*, user, workflow: Workflow | str, cron: str, timezone: str = "UTC",
                 args: dict[str, Any] | None = None, overlap: str = Schedule.SKIP, enabled: bool = True,
                 args_from_text: bool = False, require_approval: bool = False, approvers: list[str] | None = None,
                 now: datetime | None = None) -> Schedule:
    """A new schedule owned by `user`, whose runs start with `user`'s permissions.

    It first falls due at the first cron time after `now`, never earlier. With `require_approval` each due
    time starts its run held before its first step until a member of `approvers` (default Approvers) approves.
    """
    _require(user, "schedule.manage", "manage schedules")
    workflow, kept = check_schedule(workflow=workflow, cron=cron, timezone=timezone, args=args or {},
                                    overlap=overlap, args_from_text=args_from_text)
    groups = check_approvers(approvers)
    now = now or django_timezone.now()
    with transaction.atomic():
        schedule = Schedule.objects.create(
            workflow=workflow, cron=cron.strip(), timezone=timezone, args=kept, overlap=overlap, enabled=enabled,
            require_approval=bool(require_approval), approvers=groups, owner=user,
            next_fire_at=next_fire(cron, timezone, now) if enabled else None, created_at=now, updated_at=now)
        audit(codes.SCHEDULE_ADDED, user=user, target=_target(schedule),
              detail={**_settings(schedule), "next_fire_at": _iso(schedule.next_fire_at)})
    return schedule


def schedule_update(*, user, schedule: Schedule, workflow: Workflow | str | None = None, cron: str | None = None,
                    timezone: str | None = None, args: dict[str, Any] | None = None, overlap: str | None = None,
                    args_from_text: bool = False, require_approval: bool | None = None,
                    approvers: list[str] | None = None, now: datetime | None = None) -> Schedule:
    """Change what a schedule runs or when; None leaves a setting as it is.

    The person who changes it becomes its owner: runs then start with the permissions of whoever last
    chose what they run, never with those of someone who did not.
    """
    _require(user, "schedule.manage", "manage schedules")
    now = now or django_timezone.now()
    with transaction.atomic():
        locked = _lock(schedule)
        before = _settings(locked)
        workflow, kept = check_schedule(
            workflow=locked.workflow if workflow is None else workflow, cron=locked.cron if cron is None else cron,
            timezone=locked.timezone if timezone is None else timezone, overlap=overlap or locked.overlap,
            args=locked.args if args is None else args, args_from_text=args_from_text and args is not None)
        if approvers is not None:
            locked.approvers = check_approvers(approvers)
        if require_approval is not None:
            locked.require_approval = bool(require_approval)
        when = (locked.cron, locked.timezone)
        locked.workflow, locked.args, locked.overlap = workflow, kept, overlap or locked.overlap
        locked.cron = locked.cron if cron is None else cron.strip()
        locked.timezone = locked.timezone if timezone is None else timezone
        locked.owner, locked.updated_at = user, now
        if locked.enabled and (locked.cron, locked.timezone) != when:
            locked.next_fire_at = _next(locked, now)
        after = _settings(locked)
        changed = sorted(name for name in after if after[name] != before[name])
        if {"workflow", "args", "overlap"} & set(changed):  # the waiting due time was for what it ran before
            _drop_queued(locked, "the schedule was changed before its queued run could start")
        locked.save()
        if changed:
            audit(codes.SCHEDULE_CHANGED, user=user, target=_target(locked),
                  detail={"before": {n: before[n] for n in changed}, "after": {n: after[n] for n in changed}})
    return locked


def schedule_pause(*, user, schedule: Schedule, now: datetime | None = None) -> Schedule:
    """Stop firing; a due time queued behind a run in flight is dropped."""
    _require(user, "schedule.manage", "manage schedules")
    now = now or django_timezone.now()
    with transaction.atomic():
        locked = _lock(schedule)
        if not locked.enabled:
            raise ScheduleConflict(f"schedule {locked.pk} is already paused")
        _drop_queued(locked, "the schedule was paused before its queued run could start")
        locked.enabled, locked.next_fire_at, locked.updated_at = False, None, now
        locked.save(update_fields=["enabled", "next_fire_at", "queued_due_at", "updated_at"])
        audit(codes.SCHEDULE_PAUSED, user=user, target=_target(locked), detail={"workflow": locked.workflow.name})
    return locked


def schedule_resume(*, user, schedule: Schedule, now: datetime | None = None) -> Schedule:
    """Fire again from the first cron time after `now`: the due times missed while paused never run."""
    _require(user, "schedule.manage", "manage schedules")
    now = now or django_timezone.now()
    with transaction.atomic():
        locked = _lock(schedule)
        if locked.enabled:
            raise ScheduleConflict(f"schedule {locked.pk} is not paused")
        locked.enabled, locked.updated_at = True, now
        locked.next_fire_at = _next(locked, now)
        locked.save(update_fields=["enabled", "next_fire_at", "updated_at"])
        audit(codes.SCHEDULE_RESUMED, user=user, target=_target(locked),
              detail={"workflow": locked.workflow.name, "next_fire_at": _iso(locked.next_fire_at)})
    return locked


def schedule_delete(*, user, schedule: Schedule) -> None:
    """Remove a schedule and its fire records; runs it started go on (the audit trail keeps its history)."""
    _require(user, "schedule.manage", "manage schedules")
    with transaction.atomic():
        locked = _lock(schedule)
        before = _settings(locked)
        target = _target(locked)
        locked.delete()
        audit(codes.SCHEDULE_DELETED, user=user, target=target, detail={"before": before})


def kill_switch_set(*, user, engaged: bool, reason: str = "", now: datetime | None = None) -> KillSwitch:
    """Engage the kill switch (no schedule starts a run) or lift it.

    Lifting moves every enabled schedule to its first cron time after `now`, so the due times that passed
    while it was engaged never run, even those no clock tick got to refuse.
    """
    _require(user, "killswitch.set", "engage or lift the kill switch")
    now = now or django_timezone.now()
    with transaction.atomic():
        switch, _ = KillSwitch.objects.select_for_update().get_or_create(pk=KillSwitch.ONLY)
        if switch.engaged == engaged:
            raise ScheduleConflict(f"the kill switch is already {'engaged' if engaged else 'off'}")
        switch.engaged, switch.reason = engaged, reason
        switch.changed_by, switch.changed_at = user, now
        switch.save()
        if not engaged:
            for schedule in Schedule.objects.select_for_update().filter(enabled=True).order_by("pk"):
                schedule.next_fire_at = _next(schedule, now)
                schedule.save(update_fields=["next_fire_at"])
        audit(codes.KILLSWITCH_ENGAGED if engaged else codes.KILLSWITCH_LIFTED, user=user, target="killswitch",
              detail={"reason": reason})
    return switch


def _next(schedule: Schedule, now: datetime) -> datetime:
    """The first due time after `now`; a time of day that fired before the clocks went back is not repeated."""
    fired = ScheduleFire.objects.filter(schedule=schedule).order_by("-due_at").values_list("due_at", flat=True).first()
    return next_fire(schedule.cron, schedule.timezone, now, fired=fired)


def _lock(schedule: Schedule) -> Schedule:
    locked = (Schedule.objects.select_for_update(of=("self",)).select_related("workflow", "owner")
              .filter(pk=schedule.pk).first())
    if locked is None:
        raise ScheduleNotFound(f"there is no schedule {schedule.pk}")
    return locked


def _drop_queued(schedule: Schedule, why: str) -> None:
    if schedule.queued_due_at is not None:
        ScheduleFire.objects.filter(schedule=schedule, due_at=schedule.queued_due_at,
                                    status=Dispatch.QUEUED).update(status=Dispatch.DROPPED, message=why)
        schedule.queued_due_at = None


def _iso(value: datetime | None) -> str | None:
    return value.isoformat() if value else None
