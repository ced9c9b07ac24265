"""One step of a run, in full: its attempts (timings, error, governance decisions), what it was given, what it
returned, and its approval. Read from the step's row, its RunEvents and its approval rows."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from engine.interpreter.state import StepStatus
from forge.runs.compiled import run_workflow
from forge.runs.models import Approval, Run, RunEvent, StepOutput, StepResult
from forge.runs.selectors import step_iterations


@dataclass
class Attempt:
    number: int
    started_at: datetime | None = None
    finished_at: datetime | None = None
    status: str = ""
    error: str | None = None
    error_code: str | None = None
    decisions: list[dict[str, Any]] = field(default_factory=list)

    @property
    def seconds(self) -> float | None:
        if self.started_at and self.finished_at:
            return (self.finished_at - self.started_at).total_seconds()
        return None


@dataclass
class StepPanel:
    run: Run
    row: StepResult
    attempts: list[Attempt]
    given: str  # what the engine asked the agent to do, as JSON
    outputs: str
    approvals: list[Approval]
    printed: StepOutput | None  # the current attempt's output so far (a shell step), with its stderr
    iterations: list[dict[str, Any]]  # a loop step's, each with its outputs as JSON

    @property
    def running(self) -> bool:
        return self.row.status == StepStatus.RUNNING


def _json(value: Any) -> str:
    return "" if value in (None, {}, []) else json.dumps(value, ensure_ascii=False, indent=2, sort_keys=True)


def step_panel(run: Run, step: str) -> StepPanel | None:
    row = StepResult.objects.filter(run=run, step=step).first()
    if row is None:
        return None
    attempts: dict[int, Attempt] = {}
    for event in RunEvent.objects.filter(run=run, step=step, kind__in=("step", "governance")).order_by("id"):
        number = event.data.get("attempt") or 0
        if number < 1:
            continue
        attempt = attempts.setdefault(number, Attempt(number))
        if event.kind == "governance":
            attempt.decisions.append({k: event.data.get(k) for k in ("gate", "outcome", "code", "message")})
            continue
        status = event.data.get("status", "")
        if status == StepStatus.RUNNING and attempt.started_at is None:
            attempt.started_at = event.at
        if status in StepStatus.TERMINAL or status == "failed" or event.data.get("error"):
            attempt.finished_at = event.at
            attempt.error, attempt.error_code = event.data.get("error"), event.data.get("error_code")
        # An attempt that failed and waits to be tried again reads failed, not the step's pending.
        attempt.status = "failed" if event.data.get("error") and status not in StepStatus.TERMINAL else status
    approvals = list(Approval.objects.filter(run=run, step=step).select_related("decided_by").order_by("id"))
    printed = StepOutput.objects.filter(run=run, step=step, attempt=row.attempt).first()
    spec = run_workflow(run).by_id.get(step)
    iterations = []
    if spec is not None and spec.model.loop is not None and row.iteration:
        iterations = [{**item, "outputs": _json(item.get("outputs"))} for item in step_iterations(run, step)]
    return StepPanel(run=run, row=row, attempts=[attempts[n] for n in sorted(attempts)],
                     given=_json(row.dispatch), outputs=_json(row.outputs), approvals=approvals, printed=printed,
                     iterations=iterations)
