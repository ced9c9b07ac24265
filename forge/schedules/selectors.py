"""Reading schedules: the kill switch, the runs a schedule has in flight, the list people see."""

from __future__ import annotations

from typing import Any

from django.db.models import QuerySet

from engine.interpreter.state import RunStatus
from forge.accounts.roles import can
from forge.runs.models import Run
from forge.schedules.models import KillSwitch, Schedule, ScheduleFire

IN_FLIGHT = (RunStatus.PENDING, RunStatus.RUNNING)


def kill_switch() -> KillSwitch:
    """The kill switch (off until someone first sets it: its row is written then)."""
    return KillSwitch.objects.filter(pk=KillSwitch.ONLY).select_related("changed_by").first() \
        or KillSwitch(pk=KillSwitch.ONLY)


def schedules_for_user(user) -> QuerySet[Schedule]:
    """The schedules `user` may see: every one for a member of a group (who sees them on the workflows' pages),
    none for anyone else."""
    if not can(user, "run.view"):
        return Schedule.objects.none()
    return Schedule.objects.all()


def runs_in_flight(schedule: Schedule) -> QuerySet[Run]:
    """The runs `schedule` started that have not ended, oldest first."""
    # From the few runs not yet ended (Run.status is indexed), never through the schedule's whole history.
    return Run.objects.filter(status__in=IN_FLIGHT, schedule_fires__schedule=schedule).order_by("id")


def schedule_row(schedule: Schedule) -> dict[str, Any]:
    """One schedule as the CLI's --json prints it."""
    def iso(value):
        return value.isoformat() if value else None

    return {"id": schedule.pk, "workflow": schedule.workflow.name, "cron": schedule.cron,
            "timezone": schedule.timezone, "args": schedule.args, "enabled": schedule.enabled,
            "overlap": schedule.overlap, "require_approval": schedule.require_approval,
            "approvers": list(schedule.approvers), "owner": schedule.owner.get_username() if schedule.owner else None,
            "next_fire_at": iso(schedule.next_fire_at), "queued_due_at": iso(schedule.queued_due_at),
            "last_dispatch_status": schedule.last_dispatch_status or None,
            "last_dispatch_at": iso(schedule.last_dispatch_at),
            "last_dispatch_detail": schedule.last_dispatch_detail, "last_run": schedule.last_run_id}


def schedule_rows() -> list[dict[str, Any]]:
    return [schedule_row(s) for s in Schedule.objects.select_related("workflow", "owner").order_by("id")]


def fires_of_runs(run_ids) -> dict[int, ScheduleFire]:
    """The due time (with its schedule) that started each of `run_ids`, for the runs a schedule started and whose
    schedule still exists (deleting a schedule deletes its fire records)."""
    fires = (ScheduleFire.objects.filter(run_id__in=list(run_ids))
             .select_related("schedule__owner", "schedule__workflow"))
    return {fire.run_id: fire for fire in fires}
