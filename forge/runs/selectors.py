"""Reading runs: their report (the local runner's JSON), and whether they wait on people only."""

from __future__ import annotations

from typing import Any

from engine.interpreter.state import RunStatus, StepStatus
from engine.runner import RunOutcome, report
from forge.runs import bridge
from forge.runs.models import Approval, Run, RunInput, StepResult


def is_paused(run: Run) -> bool:
    """Nothing can happen until a person decides: an approval is pending, no step runs, no event is due."""
    if run.finished:
        return False
    return (Approval.objects.filter(run=run, status=Approval.PENDING).exists()
            and not StepResult.objects.filter(run=run, status=StepStatus.RUNNING).exists()
            and not RunInput.objects.filter(run=run, processed_at=None).exists()
            and not Run.objects.filter(parent=run).exclude(status__in=RunStatus.TERMINAL).exists())


def run_report(run: Run) -> dict[str, Any]:
    """The same JSON object as `python -m engine run --json` (spec section 12)."""
    run.refresh_from_db()
    interpreter = bridge.interpreter_of(run)
    paused = is_paused(run)
    outcome = RunOutcome(interpreter.workflow, interpreter.state, paused, interpreter.state.now)
    result = report(outcome)
    if run.error_code == "crash_loop":
        result.update(status=run.status, error=run.error)
    return result
