"""What restarting a run from a step will do, shown before it is done, and the fingerprint that binds the
restart to what was shown."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass

from engine.edit import unified_diff
from engine.interpreter.restart import steps_to_rerun
from engine.interpreter.state import StepStatus
from forge.runs.compiled import run_workflow
from forge.runs.models import Run, StepResult


# A list longer than this is folded on the plan's page (its count in its summary): the decision stays on the
# first screen of a big run.
FOLD_OVER = 20


@dataclass(frozen=True)
class RestartPlan:
    run: Run
    step: str
    rerun: list[str]
    carried: list[tuple[str, str]]  # (step, its outputs as JSON), in file order
    latest_number: int | None  # the workflow's latest version when it is not the run's pinned one
    diff: str  # pinned -> latest, unified

    @property
    def rerun_folded(self) -> bool:
        return len(self.rerun) > FOLD_OVER

    @property
    def carried_folded(self) -> bool:
        return len(self.carried) > FOLD_OVER

    @property
    def fingerprint(self) -> str:
        shown = {"run": self.run.pk, "version": self.run.version_id, "step": self.step, "rerun": self.rerun,
                 "carried": self.carried}
        return hashlib.sha256(json.dumps(shown, sort_keys=True, default=str).encode()).hexdigest()[:32]


def restart_plan(run: Run, step: str) -> RestartPlan:
    """ValueError when the pinned version has no such step."""
    workflow = run_workflow(run)
    again = steps_to_rerun(workflow, step)
    rows = {row.step: row for row in StepResult.objects.filter(run=run)}
    order = [spec.id for spec in workflow.steps]
    carried = [(s, json.dumps(rows[s].outputs, ensure_ascii=False, sort_keys=True)) for s in order
               if s not in again and s in rows and rows[s].status == StepStatus.COMPLETED]
    latest = run.workflow.latest_version()
    diff = ""
    if latest is not None and latest.pk != run.version_id:
        diff = unified_diff(run.version.source, latest.source, f"v{run.version.number} (this run's)",
                            f"v{latest.number} (latest)")
    return RestartPlan(run=run, step=step, rerun=[s for s in order if s in again], carried=carried,
                       latest_number=latest.number if diff else None, diff=diff)


def carried_steps(run: Run) -> set[str]:
    """The steps a restarted run carried from the run it restarted (shown as carried, not as run again)."""
    if run.restarted_from_id is None or not run.restart_from_step:
        return set()
    workflow = run_workflow(run)
    again = steps_to_rerun(workflow, run.restart_from_step)
    # What restart_state carries: the steps completed in the run restarted, other than the step and its dependents.
    done_before = StepResult.objects.filter(run_id=run.restarted_from_id, status=StepStatus.COMPLETED)
    return set(done_before.values_list("step", flat=True)) - again
