"""A schedule that requires approval starts each run held before its first step (spec 15, seed 004's dispatch
with an approval gate): what the hold says and who may lift it."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from forge.accounts.roles import APPROVERS
from forge.schedules.models import Schedule


def approvers_words(approvers: list[str]) -> str:
    """Who decides a held start, in words ("Finance or Approvers"; Admins always may)."""
    return " or ".join(sorted(approvers)) or APPROVERS


def start_hold(schedule: Schedule, due_at: datetime) -> dict[str, Any] | None:
    """RunStarted's hold for the run `schedule` starts for `due_at`, naming the schedule as it is now (None when
    the schedule does not require approval)."""
    if not schedule.require_approval:
        return None
    owner = schedule.owner.get_username() if schedule.owner else "the system"
    message = (f"Schedule #{schedule.pk} (workflow {schedule.workflow.name}, cron {schedule.cron} in "
               f"{schedule.timezone}, owner {owner}) started this run for its due time {due_at:%Y-%m-%d %H:%M} UTC. "
               f"It waits for approval by {approvers_words(schedule.approvers)} before its first step.")
    return {"message": message, "approvers": list(schedule.approvers)}
