"""What a person reads about a step: its status word and why it is not running. The one writer of both: the
round puts them in each step event, the run view renders them from rows, the page only shows what it is given."""

from __future__ import annotations

from datetime import datetime
from typing import Iterable

from engine.interpreter.state import StepStatus, Wait
from engine.terminal import never_ran, status_word  # the CLIs' status words are the console's
from forge.accounts.roles import REPLYING_BY_DEFAULT

NAMED_UPSTREAM = 5  # upstream steps named in a sentence; more read "and N more" (a fan-in has hundreds)
PEOPLE_WAITS = {Wait.APPROVAL: "approval", Wait.ESCALATION: "a decision on its failure (retry, skip or abort)",
                Wait.HOLD: "a governance hold to be approved"}
__all__ = ["never_ran", "repliers", "start_held", "status_class", "status_word", "upstream_sentence",
           "why_not_running"]


def start_held(schedule_id: int | None) -> str:
    """A run held before its first step (a schedule that requires approval), in words."""
    return "waiting for approval to start" + (f" (schedule #{schedule_id})" if schedule_id else "")


def status_class(status: str, error_code: str | None) -> str:
    """The CSS class (table badge and graph node) of a step's status."""
    return "status-upstream-failed" if never_ran(status, error_code) else f"status-{status}"


def repliers(approvers: Iterable[str]) -> str:
    """The groups that may answer a reply request, in words ("Operators or Approvers")."""
    return " or ".join(sorted(approvers) or REPLYING_BY_DEFAULT)


def upstream_sentence(waiting_for: list[str]) -> str:
    if not waiting_for:
        return "ready: waiting to be dispatched"
    named = ", ".join(waiting_for[:NAMED_UPSTREAM])
    more = len(waiting_for) - NAMED_UPSTREAM
    return f"waiting for upstream {named}" + (f" and {more} more" if more > 0 else "")


def why_not_running(status: str, wait: str | None, *, attempt: int = 0, error: str | None = None,
                    error_code: str | None = None, waiting_for: Iterable[str] = (),
                    approvers: Iterable[str] | None = None, expires_at: datetime | None = None,
                    child_run: int | None = None, held: str = "") -> str:
    """The sentence a person reads on a pending or waiting step; empty for the others.

    `waiting_for`: the step's upstream steps not yet ended; `approvers`/`expires_at`: its pending approval's
    (None when it has none); `child_run`: its sub-workflow run, once started; `held`: the run's `start_held`
    sentence while its start waits for approval, which a step that waits for nothing else says."""
    if status == StepStatus.PENDING and not wait:
        waiting_for = list(waiting_for)
        return held if held and not waiting_for else upstream_sentence(waiting_for)
    if status not in (StepStatus.PENDING, StepStatus.WAITING, StepStatus.RUNNING) or not wait:
        return ""
    until = f" until {expires_at:%Y-%m-%d %H:%M:%S} UTC" if expires_at else ""
    if wait == Wait.REPLY:
        return f"waiting for a reply from {repliers(approvers or ())}{until}"
    if wait in PEOPLE_WAITS:
        if approvers is None:
            return f"waiting for {PEOPLE_WAITS[wait]}"
        who = ", ".join(sorted(approvers)) or "Approvers"
        return f"waiting for {PEOPLE_WAITS[wait]} by {who}{until}"
    failed = f": {error}" if error else ""
    return {
        Wait.QUEUED: "waiting for a free concurrency slot",
        Wait.REDISPATCH: "about to be dispatched again",
        Wait.RETRY: f"waiting to retry after attempt {attempt} failed{failed}",
        Wait.GATE_RETRY: "blocked by a governance gate" + (f" ({error_code})" if error_code else "")
                         + f"{failed}; retrying after a backoff",
        Wait.CHILD: "waiting for its sub-workflow run" + (f" {child_run}" if child_run else ""),
    }.get(wait, f"waiting ({wait})")
