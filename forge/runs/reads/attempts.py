"""A step's attempts and the waits between them, folded from its RunEvents: each attempt runs from its
`running` event to the event that ends it, and the time in between (a queue, a retry's backoff, an escalation,
an approval, a hold, a reply) is a wait of its own. The step panel and the Gantt read the same fold; gantt.js applies the
same rules to live events."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any, Iterable

from django.db.models import Max

from engine.interpreter.state import StepStatus, Wait as EngineWait
from forge.runs.compiled import run_workflow
from forge.runs.models import Run, RunEvent, StepResult
from forge.runs.sentences import never_ran, status_word

# What a person calls the engine's wait reasons (run_attempts.js has the same table).
WAIT_NAMES = {
    EngineWait.QUEUED: "queue", EngineWait.REDISPATCH: "queue", EngineWait.RETRY: "backoff",
    EngineWait.GATE_RETRY: "backoff", EngineWait.APPROVAL: "approval", EngineWait.ESCALATION: "escalation",
    EngineWait.HOLD: "hold", EngineWait.CHILD: "sub-run", EngineWait.REPLY: "reply",
}
WAIT_SAYS = {
    "queue": "in the queue for a free slot", "backoff": "backoff before retrying",
    "escalation": "waiting for a decision on its failure", "approval": "waiting for approval",
    "hold": "held by governance for a decision", "sub-run": "waiting for its sub-workflow run",
    "reply": "waiting for a person's reply before the next iteration",
}


# An attempt's piece that ended with an iteration's output shown to people, whose reply starts the next piece.
ASKED = "asked"

# A wait shorter than this (a queue that had a free slot at once) is no wait to a person: the step panel leaves
# it out rather than show a row of 0.000 s. The Gantt keeps it (it draws nothing that narrow anyway).
SHORTEST_WAIT_SHOWN = timedelta(milliseconds=1)


def _seconds(start: datetime | None, end: datetime | None) -> float | None:
    return (end - start).total_seconds() if start and end else None


@dataclass
class Attempt:
    number: int
    started_at: datetime | None = None
    finished_at: datetime | None = None
    status: str = StepStatus.RUNNING
    error: str | None = None
    error_code: str | None = None
    decisions: list[dict[str, Any]] = field(default_factory=list)

    @property
    def seconds(self) -> float | None:
        """From its start to its own end: never the time a person took to decide what came next."""
        return _seconds(self.started_at, self.finished_at)

    def to_json(self) -> dict[str, Any]:
        return {"n": self.number, "start": _iso(self.started_at), "end": _iso(self.finished_at),
                "status": self.status}


@dataclass
class WaitSpan:
    kind: str  # queue, backoff, escalation, approval, hold, sub-run, reply
    started_at: datetime
    ended_at: datetime | None = None
    after: int = 0  # the attempt it follows (0: before the first)

    @property
    def seconds(self) -> float | None:
        return _seconds(self.started_at, self.ended_at)

    @property
    def lasted(self) -> bool:
        """Still going, or went on long enough to be worth a row of its own."""
        return self.ended_at is None or self.ended_at - self.started_at >= SHORTEST_WAIT_SHOWN

    @property
    def says(self) -> str:
        return WAIT_SAYS.get(self.kind, f"waited ({self.kind})")

    def to_json(self) -> dict[str, Any]:
        return {"kind": self.kind, "start": _iso(self.started_at), "end": _iso(self.ended_at), "after": self.after}


@dataclass
class StepTimes:
    step: str
    status: str = StepStatus.PENDING
    error_code: str | None = None
    attempts: list[Attempt] = field(default_factory=list)
    waits: list[WaitSpan] = field(default_factory=list)

    @property
    def rows(self) -> list[Attempt | WaitSpan]:
        """Attempts and the waits that lasted, in the order they happened (the step panel's table)."""
        return sorted([*(w for w in self.waits if w.lasted), *self.attempts],
                      key=lambda x: (x.started_at is None, x.started_at or 0, isinstance(x, Attempt)))

    def to_json(self) -> dict[str, Any]:
        return {"id": self.step, "status": self.status, "word": status_word(self.status, self.error_code),
                "never_ran": never_ran(self.status, self.error_code), "attempts": [a.to_json() for a in self.attempts],
                "waits": [w.to_json() for w in self.waits]}

    # -- the fold ------------------------------------------------------------------------------------------

    def _open_attempt(self) -> Attempt | None:
        last = self.attempts[-1] if self.attempts else None
        return last if last is not None and last.finished_at is None else None

    def _open_wait(self) -> WaitSpan | None:
        last = self.waits[-1] if self.waits else None
        return last if last is not None and last.ended_at is None else None

    def _close_wait(self, at: datetime) -> None:
        if (wait := self._open_wait()) is not None:
            wait.ended_at = at

    def apply_step(self, data: dict[str, Any], at: datetime) -> None:
        status, number, wait = data.get("status") or "", data.get("attempt") or 0, data.get("wait")
        self.status, self.error_code = status, data.get("error_code")
        if status == StepStatus.RUNNING:
            self._close_wait(at)
            attempt = next((a for a in reversed(self.attempts) if a.number == number), None)
            if attempt is None or attempt.status == ASKED:  # a reply gate's next iteration: a piece of its own
                self.attempts.append(Attempt(number, started_at=at))
            elif attempt.finished_at is not None and attempt.status in ("blocked", "held"):
                attempt.started_at, attempt.finished_at, attempt.status = at, None, StepStatus.RUNNING  # redispatched
            return
        if (attempt := self._open_attempt()) is not None:
            attempt.finished_at = at
            attempt.error, attempt.error_code = data.get("error"), data.get("error_code")
            if status in StepStatus.TERMINAL and status != StepStatus.FAILED:
                attempt.status = status
            elif wait == EngineWait.REPLY:
                attempt.status = ASKED
            elif wait in (EngineWait.GATE_RETRY, EngineWait.HOLD) and any(
                    d.get("outcome") in ("block", "hold") for d in attempt.decisions):
                attempt.status = "blocked" if wait == EngineWait.GATE_RETRY else "held"
            else:
                attempt.status = StepStatus.FAILED if data.get("error") or status == StepStatus.FAILED else status
        kind = WAIT_NAMES.get(wait, wait) if wait else None
        current = self._open_wait()
        if current is not None and current.kind != kind:
            current.ended_at = at
            current = None
        if kind and current is None:
            self.waits.append(WaitSpan(kind, at, after=self.attempts[-1].number if self.attempts else 0))
        if status in StepStatus.TERMINAL:
            self._close_wait(at)

    def apply_governance(self, data: dict[str, Any]) -> None:
        number = data.get("attempt") or 0
        attempt = next((a for a in reversed(self.attempts) if a.number == number), None)
        if attempt is not None:
            attempt.decisions.append({k: data.get(k) for k in ("gate", "outcome", "code", "message")})


def _iso(value: datetime | None) -> str | None:
    return value.isoformat() if value else None


def fold(step: str, events: Iterable[tuple[str, dict[str, Any], datetime]]) -> StepTimes:
    """(kind, data, at) of one step's step and governance events, in order."""
    times = StepTimes(step)
    for kind, data, at in events:
        if kind == "step":
            times.apply_step(data, at)
        elif kind == "governance":
            times.apply_governance(data)
    return times


def step_times(run: Run, step: str) -> StepTimes:
    events = (RunEvent.objects.filter(run=run, step=step, kind__in=("step", "governance")).order_by("id")
              .values_list("kind", "data", "at"))
    return fold(step, events.iterator())


def run_times(run: Run) -> dict[str, Any]:
    """Every step's attempts and waits on the run's clock (the Gantt's and the status list's first picture);
    later events are folded by the page. Steps come in the workflow's order."""
    last = RunEvent.objects.filter(run=run).aggregate(last=Max("id"))["last"] or 0
    run.refresh_from_db(fields=["status", "created_at", "started_at", "finished_at"])
    workflow = run_workflow(run)
    steps = {spec.id: StepTimes(spec.id) for spec in workflow.steps}
    for step, status, code in StepResult.objects.filter(run=run).values_list("step", "status", "error_code"):
        if step in steps:
            steps[step].status, steps[step].error_code = status, code
    events = (RunEvent.objects.filter(run=run, id__lte=last, kind__in=("step", "governance")).order_by("id")
              .values_list("step", "kind", "data", "at"))
    for step, kind, data, at in events.iterator(chunk_size=2000):
        times = steps.get(step)
        if times is None:
            continue
        if kind == "step":
            times.apply_step(data, at)
        else:
            times.apply_governance(data)
    return {"run": run.pk, "status": run.status, "last_event_id": last,
            "started_at": _iso(run.started_at or run.created_at), "finished_at": _iso(run.finished_at),
            "steps": [times.to_json() for times in steps.values()]}
