"""What the run view's header says of a run: how it was started, its arguments, its clock, its deadline (the
document's `timeout`), its phases, and which step the main button restarts from when no step is selected."""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.urls import reverse
from django.utils import timezone

from engine.interpreter.state import StepStatus
from engine.interpreter.triggers import UPSTREAM_FAILED
from engine.secrets import redact_secrets
from forge.accounts.roles import can
from forge.audit import codes
from forge.audit.models import AuditEvent
from forge.runs.reads.run_view import RunView
from forge.runs.compiled import run_workflow
from forge.runs.models import Run
from forge.schedules.models import Schedule

SHORT = 80  # characters of an argument's value shown before "show all"
RUN_TIMEOUT = "run_timeout"  # the error code of a run its deadline ended
DEADLINE_PASSED = "deadline passed: the run is being stopped"  # run_actions.js says the same


@dataclass(frozen=True)
class Origin:
    """How the run was started: `kind` is person, schedule, restart, child or system."""

    kind: str
    by: str  # the person (or the schedule's owner); "" for the system
    schedule_id: int | None = None
    schedule_cron: str = ""
    due_at: datetime | None = None
    run_id: int | None = None  # the run restarted, or the parent run
    step: str = ""  # the step restarted from, or the parent's step


@dataclass(frozen=True)
class Arg:
    name: str
    text: str  # as the audit trail shows it: a credential-named argument, a URL's password or query redacted
    redacted: bool = False

    @property
    def short(self) -> str:
        return self.text if len(self.text) <= SHORT else self.text[:SHORT] + "…"

    @property
    def long(self) -> bool:
        return len(self.text) > SHORT


@dataclass(frozen=True)
class RunHead:
    origin: Origin
    args: list[Arg]
    start: datetime  # when the clock starts: the run's first step, or its creation while none has started
    end: datetime | None
    phases: list[tuple[str, list[str]]]  # each phase and its steps, in the document's order
    failed_step: str  # the step that failed (not one blocked by it); "" when none did
    deadline: datetime | None = None  # when the document's timeout ends the run, while it has not ended
    timeout: str = ""  # the document's timeout as written ("10m"), "" without one
    stopped_at_deadline: bool = False  # the run ended because its deadline passed

    @property
    def seconds(self) -> float:
        return ((self.end or timezone.now()) - self.start).total_seconds()

    @property
    def deadline_says(self) -> str:
        """The countdown to the deadline as run_actions.js writes it each second: "deadline in 4m 12s"."""
        if self.deadline is None:
            return ""
        left = left_text((self.deadline - timezone.now()).total_seconds())
        return DEADLINE_PASSED if left == "passed" else f"deadline in {left}"


def duration_text(seconds: float, *, ticking: bool = False) -> str:
    """A duration in words; an ended one under 10 s to a tenth (a clock still ticking shows whole seconds)."""
    if seconds < 10 and not ticking:
        return f"{max(0.0, seconds):.1f} s"
    seconds = max(0, int(seconds))
    hours, rest = divmod(seconds, 3600)
    minutes, secs = divmod(rest, 60)
    if hours:
        return f"{hours} h {minutes:02d} min {secs:02d} s"
    if minutes:
        return f"{minutes} min {secs:02d} s"
    return f"{secs} s"


def left_text(seconds: float) -> str:
    """Time left in the countdowns' words (countdown.js, which run_actions.js uses): "1h 0m 5s", "4m 12s", "9s"; "passed"
    at or after zero."""
    seconds = round(seconds)
    if seconds <= 0:
        return "passed"
    hours, rest = divmod(seconds, 3600)
    minutes, secs = divmod(rest, 60)
    return (f"{hours}h " if hours else "") + (f"{minutes}m " if hours or minutes else "") + f"{secs}s"


def timeout_text(value: Any) -> str:
    """A document's `timeout` as its author wrote it: "10m" stays "10m", 600 reads "600s"."""
    if value is None:
        return ""
    return value.strip() if isinstance(value, str) else f"{value:g}s"


def _text(value: Any) -> str:
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False)


def origin(run: Run) -> Origin:
    by = run.started_by.get_username() if run.started_by_id else ""
    if run.restarted_from_id or run.restart_from_step:  # the step stays when the run restarted is deleted
        return Origin("restart", by, run_id=run.restarted_from_id, step=run.restart_from_step)
    if run.parent_id or run.parent_step:
        return Origin("child", by, run_id=run.parent_id, step=run.parent_step)
    # The audit trail names the run a schedule started (forge/schedules/firing.py), and keeps it after the
    # schedule and its fire records are deleted.
    dispatched = AuditEvent.objects.filter(run_id=run.pk, code=codes.SCHEDULE_DISPATCHED).order_by("id").first()
    if dispatched is not None:
        number = dispatched.target.removeprefix("schedule:")
        schedule_id = int(number) if number.isascii() and number.isdigit() else None
        schedule = Schedule.objects.filter(pk=schedule_id).first() if schedule_id else None
        due_at = dispatched.detail.get("due_at")
        return Origin("schedule", by, schedule_id=schedule_id, schedule_cron=schedule.cron if schedule else "",
                      due_at=datetime.fromisoformat(due_at) if due_at else None)
    return Origin("person" if by else "system", by)


def run_head(view: RunView) -> RunHead:
    run = view.run
    phases = {phase: [] for phase in view.phases}
    for node in view.nodes:
        if node.phase:
            phases.setdefault(node.phase, []).append(node.id)
    failed = next((node.id for node in view.nodes
                   if node.status in (StepStatus.FAILED, StepStatus.TIMED_OUT) and node.error_code != UPSTREAM_FAILED),
                  "")
    end = (run.finished_at or run.progressed_at) if run.finished else None
    shown = redact_secrets(run.args)
    args = [Arg(name, _text(shown[name]), redacted=shown[name] != value) for name, value in sorted(run.args.items())]
    timeout = timeout_text(run_workflow(run).document.timeout)
    return RunHead(origin=origin(run), args=args,
                   start=run.started_at or run.created_at, end=end, phases=list(phases.items()), failed_step=failed,
                   deadline=run.deadline_at if not run.finished else None, timeout=timeout,
                   stopped_at_deadline=run.finished and run.error_code == RUN_TIMEOUT)


def run_again_url(run: Run) -> str:
    """The workflow page's Run form, of the run's own version, filled with its arguments."""
    return f"{reverse('console:workflow', args=[run.workflow.name])}?run_again={run.pk}"


def head_context(user, view: RunView) -> dict[str, Any]:
    """What run_head.html needs beyond the run view's own context."""
    head = run_head(view)
    return {"head": head, "duration": duration_text(head.seconds, ticking=head.end is None),
            "may_start": can(user, "run.start"),
            "run_again_url": run_again_url(view.run)}
