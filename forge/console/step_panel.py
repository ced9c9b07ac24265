"""One step of a run, in full: its attempts (timings, error, governance decisions), what it was given, what it
returned, and its approval. Read from the step's row, its RunEvents and its approval rows."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from engine.interpreter.state import StepStatus
from forge.console.attempts import StepTimes, step_times
from forge.runs.compiled import run_workflow
from forge.runs.models import Approval, Run, StepOutput, StepResult
from forge.runs.selectors import step_iterations
from forge.runs.sentences import status_class, status_word


@dataclass
class StepPanel:
    run: Run
    row: StepResult
    times: StepTimes  # its attempts, each with its own duration, and the waits between them
    given: str  # what the engine asked the agent to do, as JSON
    outputs: str
    approvals: list[Approval]
    printed: StepOutput | None  # the current attempt's output so far (a shell step), with its stderr
    iterations: list[dict[str, Any]]  # a loop step's, each with its outputs as JSON

    @property
    def running(self) -> bool:
        return self.row.status == StepStatus.RUNNING

    # The heading's status as the steps table words and colours it ("not run: upstream failed").
    @property
    def word(self) -> str:
        return status_word(self.row.status, self.row.error_code)

    @property
    def status_class(self) -> str:
        return status_class(self.row.status, self.row.error_code)


def _json(value: Any) -> str:
    return "" if value in (None, {}, []) else json.dumps(value, ensure_ascii=False, indent=2, sort_keys=True)


def step_panel(run: Run, step: str) -> StepPanel | None:
    row = StepResult.objects.filter(run=run, step=step).first()
    if row is None:
        return None
    approvals = list(Approval.objects.filter(run=run, step=step).select_related("decided_by").order_by("id"))
    printed = StepOutput.objects.filter(run=run, step=step, attempt=row.attempt).first()
    spec = run_workflow(run).by_id.get(step)
    iterations = []
    if spec is not None and spec.model.loop is not None and row.iteration:
        iterations = [{**item, "outputs": _json(item.get("outputs"))} for item in step_iterations(run, step)]
    return StepPanel(run=run, row=row, times=step_times(run, step),
                     given=_json(row.dispatch), outputs=_json(row.outputs), approvals=approvals, printed=printed,
                     iterations=iterations)
