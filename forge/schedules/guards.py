"""The guard clauses a due time must pass before its run starts (seed 004), as small functions.

Each reads, never writes: a refusal is a value (a status and a human message) that the firing records,
so a refused due time leaves nothing but its fire record. The overlap check sits between `BEFORE_OVERLAP`
and `owner_may_start` in firing.py, because it is the one that acts (queues, or cancels).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from engine.arguments import ArgumentsInvalid, resolve_args
from engine.problems import WorkflowInvalid
from forge.accounts.roles import can
from forge.governance.budget_check import exhausted_budget
from forge.runs.compiled import new_run_workflow
from forge.runs.creation import RunRefused, check_args_size, check_references
from forge.schedules.models import Dispatch, Schedule
from forge.schedules.selectors import kill_switch
from forge.workflows.models import WorkflowVersion


@dataclass(frozen=True)
class Refusal:
    status: str
    message: str


@dataclass
class Attempt:
    """One due time being decided; the validation guard leaves the version it checked for the dispatch."""

    schedule: Schedule
    now: datetime
    version: WorkflowVersion | None = None


def kill_switch_off(attempt: Attempt) -> Refusal | None:
    """While the kill switch is engaged no schedule starts a run."""
    switch = kill_switch()
    if not switch.engaged:
        return None
    who = f" by {switch.changed_by.get_username()}" if switch.changed_by else ""
    why = f": {switch.reason}" if switch.reason else ""
    return Refusal(Dispatch.KILL_SWITCH, f"the kill switch is engaged{who}{why}")


def within_budget(attempt: Attempt) -> Refusal | None:
    """No run starts while a budget covering its workflow has already used its limit (the Run form says the
    same before a person starts one)."""
    why = exhausted_budget(attempt.schedule.workflow.name, attempt.now)
    return None if why is None else Refusal(Dispatch.BUDGET_EXCEEDED, why)


def valid(attempt: Attempt) -> Refusal | None:
    """The workflow's latest version compiles, the schedule's arguments fit it, and its workflow
    references form no cycle: the checks run_start makes, made first so that a refusal is recorded."""
    schedule = attempt.schedule
    version = schedule.workflow.latest_version()
    if version is None:
        return Refusal(Dispatch.VALIDATION_FAILED, f"workflow {schedule.workflow.name!r} has no saved version")
    try:
        workflow, _ = new_run_workflow(version)
        check_args_size(schedule.args)
        resolve_args(workflow.document, schedule.args)
        check_references(workflow)
    except WorkflowInvalid as exc:
        return Refusal(Dispatch.VALIDATION_FAILED, f"{version} is not valid: {exc}")
    except ArgumentsInvalid as exc:
        return Refusal(Dispatch.VALIDATION_FAILED, f"the schedule's arguments do not fit {version}: {exc}")
    except RunRefused as exc:
        return Refusal(Dispatch.VALIDATION_FAILED, f"{version}: {exc}")
    attempt.version = version
    return None


BEFORE_OVERLAP = (kill_switch_off, within_budget, valid)


def owner_may_start(attempt: Attempt, *, cancelling: bool = False) -> Refusal | None:
    """The owner may still start runs (and cancel them, when the overlap policy cancels the run in flight);
    the system (no owner) may always."""
    owner = attempt.schedule.owner
    if owner is None:
        return None
    if not owner.is_active:
        return Refusal(Dispatch.NOT_PERMITTED, f"its owner {owner.get_username()} is deactivated")
    for action, what in (("run.start", "start runs"), ("run.cancel", "cancel runs")):
        if (action == "run.start" or cancelling) and not can(owner, action):
            return Refusal(Dispatch.NOT_PERMITTED, f"its owner {owner.get_username()} may no longer {what}")
    return None
