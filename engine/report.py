"""A run's outcome as the local runner's JSON object (spec section 12); the cluster reports the same."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from engine.interpreter import RunState
from engine.workflow import Workflow


@dataclass
class RunOutcome:
    workflow: Workflow
    state: RunState
    paused: bool
    finished_at: float
    artifacts: dict[str, dict] | None = None  # step -> {"kept", "refused"} (engine.artifacts.Listing); None: not listed

    @property
    def status(self) -> str:
        return "paused" if self.paused else self.state.status


def report(outcome: RunOutcome) -> dict[str, Any]:
    """The runner's JSON object (spec section 12)."""
    state = outcome.state
    workflow = outcome.workflow
    steps = {}
    for spec in workflow.steps:
        st = state.steps[spec.id]
        steps[spec.id] = {
            "status": st.status, "attempts": st.attempt, "outputs": st.outputs if st.outputs is not None else {},
            "stdout": st.stdout or "", "error": st.error, "error_code": st.error_code, "iterations": st.iteration,
        }
        if spec.model.loop is not None:
            steps[spec.id]["history"] = [call["name"] for call in st.history]
        if spec.model.artifacts and outcome.artifacts is not None:
            steps[spec.id]["artifacts"] = outcome.artifacts.get(spec.id, {"kept": [], "refused": []})
    approvals = [{"step": a["step"], "kind": a["kind"], "status": a["status"], "decision": a["decision"]}
                 for a in state.approvals]
    return {"status": outcome.status, "error": state.error, "error_code": state.error_code,
            "layers": workflow.layers(), "dispatch_order": list(state.dispatch_order), "steps": steps,
            "approvals": approvals, "variables": state.variables}
