"""What one round writes and does, gathered while its events are fed.

The round (`rounds.Round`) owns an `Effects` and writes it in one batch at
the end; dispatch and children code record what they cause only through
these methods, so everything a round writes is listed here.
"""

from __future__ import annotations

from typing import Callable

from forge.audit.models import AuditEvent
from forge.audit.services import audit_event
from forge.runs.models import Approval, Run, RunEvent, RunInput


class Effects:
    def __init__(self, run: Run, now):
        self.run = run
        self.now = now
        self.at = now.timestamp()
        self.step_fields: dict[str, dict] = {}       # step -> columns beyond the interpreter's (leases, dispatch)
        self.events: list[RunEvent] = []
        self.audits: list[AuditEvent] = []
        self.inputs: list[RunInput] = []
        self.approvals: list[Approval] = []
        self.next_events: list = []                   # events fed in this round, right after the current one
        self.inline: list = []                       # dispatch.InlineCall, run once the round commits
        self.after_commit: list[Callable[[], None]] = []

    def log(self, kind: str, step: str, data: dict) -> None:
        """A RunEvent: what the live view shows."""
        self.events.append(RunEvent(run_id=self.run.pk, kind=kind, step=step, data=data, at=self.now))

    def audit(self, code: str, *, step: str = "", attempt: int | None = None, target: str = "",
              detail: dict | None = None, actor: tuple[str, int | None] | None = None) -> None:
        """`actor`: (name, user id) of the person whose request this round carries out; the system otherwise."""
        event = audit_event(code, run_id=self.run.pk, step=step, attempt=attempt, target=target, detail=detail,
                            at=self.now)
        if actor is not None:
            event.actor, event.actor_id = actor
        self.audits.append(event)

    def add_input(self, key: str, event, due_at=None) -> None:
        """An event for this run's inbox, fed when it falls due (now, unless `due_at`)."""
        self.inputs.append(RunInput(run_id=self.run.pk, key=key, event=event.to_json(), due_at=due_at or self.now,
                                    created_at=self.now))

    def feed_next(self, event) -> None:
        """An event this round feeds right after the current one (a gate's verdict, a child that cannot start)."""
        self.next_events.append(event)

    def set_step(self, step: str, **fields) -> None:
        """Columns of the step's row beyond what the interpreter knows; the step is written this round."""
        self.step_fields.setdefault(step, {}).update(fields)

    def touch_step(self, step: str) -> None:
        self.step_fields.setdefault(step, {})

    def request_approval(self, approval: Approval) -> None:
        self.approvals.append(approval)

    def run_inline(self, call) -> None:
        self.inline.append(call)

    def drop_inline(self, step: str) -> None:
        self.inline = [call for call in self.inline if call.step != step]

    def on_commit(self, callback: Callable[[], None]) -> None:
        self.after_commit.append(callback)

    def next_fence(self) -> int:
        """A new fencing number for an attempt of this run (saved with the run's row)."""
        self.run.fences += 1
        return self.run.fences
